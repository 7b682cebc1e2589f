//! The seed's `MyApp` controller logic, as a pure function.
//!
//! A `MyApp` (`spec.replicas`, default 1; `spec.image`, default `nginx:alpine`) wants one Deployment
//! `<name>-deploy` running that image, and reports `status.phase`: `Created` until the observed Deployment
//! has as many ready replicas as asked, then `Ready`.
//!
//! The function only needs `serde_json`, so the same code builds natively (unit tests, the benchmark's
//! native floor) and as a component: the WebAssembly glue is in [`component`], compiled for wasm32 only.

#[cfg(target_arch = "wasm32")]
mod component;

use std::borrow::Cow;

use serde_json::{Map, Value, json};

/// `spec.replicas` when the parent leaves it out.
pub const DEFAULT_REPLICAS: i32 = 1;
/// `spec.image` when the parent leaves it out.
pub const DEFAULT_IMAGE: &str = "nginx:alpine";

/// What the guest wants, the native mirror of the contract's `response` record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Output {
    /// The desired children, one JSON object each.
    pub children: Vec<String>,
    /// The guest-owned part of `.status` (a JSON object), or `None` to leave the status alone.
    pub status: Option<String>,
    /// Reconcile again after this many seconds even if nothing changes.
    pub requeue_after_seconds: Option<u32>,
    /// With `finalizing`: cleanup is done.
    pub finalized: bool,
}

/// Computes the desired children and status of one `MyApp`.
///
/// `parent_json` is the `MyApp` object, `children_json` the children it owns (each one JSON object), as the
/// host observed them. While `finalizing`, there is nothing to clean up beyond what the host prunes, so the
/// answer is no children and `finalized`, whatever the spec says (a bad spec must not block deletion).
///
/// Errors (never panics) on a parent that is not a JSON object with a name, on an invalid spec (the message
/// names the field), and on an observed child that is not JSON.
pub fn reconcile(
    parent_json: &str,
    children_json: &[String],
    finalizing: bool,
) -> Result<Output, String> {
    if finalizing {
        return Ok(Output {
            finalized: true,
            ..Output::default()
        });
    }
    let parent: Value =
        serde_json::from_str(parent_json).map_err(|e| format!("parent is not valid JSON: {e}"))?;
    let name = parent
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .filter(|name| !name.is_empty())
        .ok_or("parent has no metadata.name")?;
    if name.len() > 63 {
        // The name is also the `app` label value, which Kubernetes caps at 63 characters.
        return Err(format!(
            "metadata.name \"{name}\" is longer than 63 characters, too long for the app label"
        ));
    }
    let namespace = parent
        .pointer("/metadata/namespace")
        .and_then(Value::as_str);
    let (replicas, image) = spec(&parent)?;

    let deploy_name = format!("{name}-deploy");
    let ready = observed_ready_replicas(children_json, &deploy_name)?;
    let phase = if ready == Some(i64::from(replicas)) {
        "Ready"
    } else {
        "Created"
    };

    let deployment = deployment(name, namespace, &deploy_name, replicas, image);
    let status = json!({
        "phase": phase,
        "replicas": replicas,
        "readyReplicas": ready.unwrap_or(0),
    });
    Ok(Output {
        children: vec![deployment.to_string()],
        status: Some(status.to_string()),
        requeue_after_seconds: None,
        finalized: false,
    })
}

/// Reads `spec.replicas` and `spec.image`, with their defaults; an absent or `null` field takes its default.
fn spec(parent: &Value) -> Result<(i32, &str), String> {
    let spec = match parent.get("spec") {
        None | Some(Value::Null) => return Ok((DEFAULT_REPLICAS, DEFAULT_IMAGE)),
        Some(Value::Object(spec)) => spec,
        Some(other) => return Err(format!("spec must be an object, got {other}")),
    };
    let replicas = match spec.get("replicas") {
        None | Some(Value::Null) => DEFAULT_REPLICAS,
        Some(value) => value
            .as_i64()
            .and_then(|n| i32::try_from(n).ok())
            .filter(|n| *n >= 0)
            .ok_or_else(|| {
                format!("spec.replicas must be an integer from 0 to 2147483647, got {value}")
            })?,
    };
    let image = match spec.get("image") {
        None | Some(Value::Null) => DEFAULT_IMAGE,
        Some(Value::String(image)) if !image.trim().is_empty() => image,
        Some(value) => {
            return Err(format!(
                "spec.image must be a non-empty string, got {value}"
            ));
        }
    };
    Ok((replicas, image))
}

/// `status.readyReplicas` of the observed Deployment `deploy_name` (0 when it has none yet), or `None`
/// when no such Deployment was observed.
fn observed_ready_replicas(children: &[String], deploy_name: &str) -> Result<Option<i64>, String> {
    for (i, child) in children.iter().enumerate() {
        // Fast path: read only the three fields the rule needs, borrowing, without building a tree of
        // the whole object (most of a reconcile's time in wasm went there). Any other shape takes the
        // general path, so both give the same answer.
        let (kind, name, ready) = match serde_json::from_str::<ObservedChild>(child) {
            Ok(c) => (
                c.kind,
                c.metadata.and_then(|m| m.name),
                c.status.and_then(|s| s.ready_replicas),
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
#[derive(serde::Deserialize)]
struct ObservedChild<'a> {
    #[serde(borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    metadata: Option<ObservedMeta<'a>>,
    status: Option<ObservedStatus>,
}

#[derive(serde::Deserialize)]
struct ObservedMeta<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
}

#[derive(serde::Deserialize)]
struct ObservedStatus {
    #[serde(rename = "readyReplicas")]
    ready_replicas: Option<i64>,
}

/// The desired Deployment, as the seed's `create_deployment` builds it.
fn deployment(
    name: &str,
    namespace: Option<&str>,
    deploy_name: &str,
    replicas: i32,
    image: &str,
) -> Value {
    let labels = json!({ "app": name });
    let mut metadata = Map::new();
    metadata.insert("name".into(), deploy_name.into());
    if let Some(namespace) = namespace {
        metadata.insert("namespace".into(), namespace.into());
    }
    let mut deployment_labels = labels.clone();
    if cfg!(feature = "variant-b") {
        deployment_labels["example.com/variant"] = "b".into();
    }
    metadata.insert("labels".into(), deployment_labels);
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata,
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": labels.clone() },
            "template": {
                "metadata": { "labels": labels },
                "spec": {
                    "containers": [{
                        "name": "main",
                        "image": image,
                        "ports": [{ "containerPort": 80 }],
                    }],
                },
            },
        },
    })
}
