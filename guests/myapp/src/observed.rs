//! Reading the observed children: how many replicas of the parent's Deployment are ready.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use crate::object::Object;

/// `status.readyReplicas` of the observed Deployment `deploy_name` (0 when it has none yet), or `None`
/// when no such Deployment was observed.
pub(crate) fn ready_replicas(
    children: &[String],
    deploy_name: &str,
) -> Result<Option<i64>, String> {
    for (i, child) in children.iter().enumerate() {
        // Fast path: read only the three fields the rule needs, borrowing, without building a tree of
        // the whole object. Any other shape takes the general path, so both give the same answer.
        let (kind, name, ready) = match serde_json::from_str::<Object<ObservedChild>>(child) {
            Ok(Object(c)) => (
                c.kind,
                c.metadata.and_then(|Object(m)| m.name),
                c.status.and_then(|Object(s)| s.ready_replicas),
            ),
            Err(_) => {
                let child: Value = serde_json::from_str(child)
                    .map_err(|e| format!("observed child {i} is not valid JSON: {e}"))?;
                let field = |pointer| {
                    child
                        .pointer(pointer)
                        .and_then(Value::as_str)
                        .map(|s| s.to_owned().into())
                };
                let ready = child
                    .pointer("/status/readyReplicas")
                    .and_then(Value::as_i64);
                (field("/kind"), field("/metadata/name"), ready)
            }
        };
        if kind.as_deref() == Some("Deployment") && name.as_deref() == Some(deploy_name) {
            return Ok(Some(ready.unwrap_or(0)));
        }
    }
    Ok(None)
}

/// The fields of an observed child that the rule reads.
#[derive(Deserialize)]
struct ObservedChild<'a> {
    #[serde(borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    metadata: Option<Object<ObservedMeta<'a>>>,
    status: Option<Object<ObservedStatus>>,
}

#[derive(Deserialize)]
struct ObservedMeta<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ObservedStatus {
    #[serde(rename = "readyReplicas")]
    ready_replicas: Option<i64>,
}
