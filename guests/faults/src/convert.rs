//! The faults guest's `convert`: a plain conversion, or the failure the object's annotation
//! `faults.example.com/convert` asks for (see [`convert`]), for the host's conversion-webhook tests.

use serde_json::{Map, Value};

/// The annotation that picks the conversion fault.
const ANNOTATION: &str = "faults.example.com/convert";

/// Converts `object` to `to_api_version`: without a fault, only `apiVersion` changes (the faults
/// guest's spec is free-form, the same in every version). The annotation picks a fault:
///
/// - `error`: `Err("conversion refused by the faults guest")`;
/// - `trap`: panics, which (with `panic = "abort"`) traps;
/// - `wrong-uid`: converts, but changes `metadata.uid`, which the API server must refuse;
/// - `wrong-version`: returns the object with its `apiVersion` unchanged;
/// - `add-label`: converts, but adds the label `faults.example.com/converted: "true"`, which the host
///   must refuse (a conversion changes the version and the content, not the metadata);
/// - `drop-finalizers`: converts, but drops `metadata.finalizers`, which the host must refuse too.
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
        "add-label" => {
            let metadata = metadata_mut(fields)?;
            let labels = metadata
                .entry("labels")
                .or_insert_with(|| Value::Object(Map::new()));
            let Some(labels) = labels.as_object_mut() else {
                return Err("metadata.labels is not an object".into());
            };
            labels.insert("faults.example.com/converted".into(), "true".into());
        }
        "drop-finalizers" => {
            metadata_mut(fields)?.remove("finalizers");
        }
        other => return Err(format!("unknown {ANNOTATION} {other:?}")),
    }
    fields.insert("apiVersion".into(), to_api_version.into());
    Ok(object.to_string())
}

fn metadata_mut(fields: &mut Map<String, Value>) -> Result<&mut Map<String, Value>, String> {
    fields
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| "object has no metadata".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn converted(fault: &str) -> Value {
        let object = serde_json::json!({
            "apiVersion": "example.com/v1alpha1", "kind": "MyApp",
            "metadata": {
                "name": "a", "finalizers": ["example.com/keep"],
                "annotations": {ANNOTATION: fault},
            },
        });
        serde_json::from_str(&convert(&object.to_string(), "example.com/v1beta1").unwrap()).unwrap()
    }

    #[test]
    fn add_label_adds_a_label_and_drop_finalizers_drops_them() {
        let labelled = converted("add-label");
        assert_eq!(labelled["apiVersion"], "example.com/v1beta1");
        assert_eq!(
            labelled["metadata"]["labels"]["faults.example.com/converted"],
            "true"
        );
        assert_eq!(labelled["metadata"]["finalizers"][0], "example.com/keep");
        let dropped = converted("drop-finalizers");
        assert_eq!(dropped["apiVersion"], "example.com/v1beta1");
        assert!(dropped["metadata"].get("finalizers").is_none(), "{dropped}");
    }
}
