//! The faults guest's `convert`: a plain conversion, or the failure the object's annotation
//! `faults.example.com/convert` asks for (see [`convert`]), for the host's conversion-webhook tests.

use serde_json::Value;

/// The annotation that picks the conversion fault.
const ANNOTATION: &str = "faults.example.com/convert";

/// Converts `object` to `to_api_version`: without a fault, only `apiVersion` changes (the faults
/// guest's spec is free-form, the same in every version). The annotation picks a fault:
///
/// - `error`: `Err("conversion refused by the faults guest")`;
/// - `trap`: panics, which (with `panic = "abort"`) traps;
/// - `wrong-uid`: converts, but changes `metadata.uid`, which the API server must refuse;
/// - `wrong-version`: returns the object with its `apiVersion` unchanged.
pub(crate) fn convert(object: &str, to_api_version: &str) -> Result<String, String> {
    let mut object: Value =
        serde_json::from_str(object).map_err(|e| format!("object is not JSON: {e}"))?;
    let Some(fields) = object.as_object_mut() else {
        return Err("object is not a JSON object".into());
    };
    let fault = fields
        .get("metadata")
        .and_then(|m| m.pointer(&format!("/annotations/{}", ANNOTATION.replace('/', "~1"))))
        .and_then(Value::as_str)
        .unwrap_or("");
    match fault {
        "" => {}
        "error" => return Err("conversion refused by the faults guest".into()),
        "trap" => panic!("fault: convert trap"),
        "wrong-uid" => {
            let uid = fields
                .get("metadata")
                .and_then(|m| m.get("uid"))
                .and_then(Value::as_str)
                .unwrap_or("");
            let wrong = format!("{uid}-wrong");
            if let Some(metadata) = fields.get_mut("metadata").and_then(Value::as_object_mut) {
                metadata.insert("uid".into(), wrong.into());
            }
        }
        "wrong-version" => return Ok(object.to_string()),
        other => return Err(format!("unknown {ANNOTATION} {other:?}")),
    }
    fields.insert("apiVersion".into(), to_api_version.into());
    Ok(object.to_string())
}
