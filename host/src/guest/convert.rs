//! One conversion call: a custom resource from one version of its CRD to another, computed by the
//! module's `convert` export for the conversion webhook. The same sandbox as a reconcile: a fresh
//! instance, the deadline, the memory cap and the output cap.

use serde_json::Value;

use super::call::json_kind;
use super::error::GuestError;
use super::module::Module;

impl Module {
    /// Converts `object` to `to_api_version`. The answer is checked to be a JSON object of at most the
    /// output cap; whether it is the right object in the right version is the webhook's check.
    pub fn convert(&self, object: &Value, to_api_version: &str) -> Result<Value, GuestError> {
        if !self.converts() {
            return Err(GuestError::NoConvert {
                world: self.world(),
            });
        }
        let tag = conversion_tag(object, to_api_version);
        let input = object.to_string();
        let output = self.call_fresh(&tag, |bindings, store| {
            bindings
                .convert(store, &input, to_api_version)
                .expect("a module that converts has the convert export")
        })?;
        let limit = self.runtime.config.max_output_bytes;
        if output.len() > limit {
            return Err(GuestError::OutputTooLarge {
                size: output.len(),
                limit,
            });
        }
        match serde_json::from_str(&output) {
            Ok(Value::Object(map)) => Ok(Value::Object(map)),
            Ok(other) => Err(GuestError::InvalidJson {
                what: "converted object".into(),
                reason: format!("expected an object, got {}", json_kind(&other)),
            }),
            Err(e) => Err(GuestError::InvalidJson {
                what: "converted object".into(),
                reason: e.to_string(),
            }),
        }
    }
}

/// Names the object and the target in the guest's log lines, as the parent does for a reconcile.
fn conversion_tag(object: &Value, to_api_version: &str) -> String {
    let field = |pointer| object.pointer(pointer).and_then(Value::as_str);
    let name = match (field("/metadata/namespace"), field("/metadata/name")) {
        (Some(namespace), Some(name)) => format!("{namespace}/{name}"),
        (None, Some(name)) => name.to_string(),
        _ => "(unnamed)".to_string(),
    };
    format!("{name} -> {to_api_version}")
}
