//! The related-objects example: a `ConfiguredApp` (`spec.image`, `spec.configMapName`, optional
//! `spec.replicas`, default 1) runs one Deployment `<name>` whose pods mount the ConfigMap its spec
//! names at `/etc/config`. The guest asks for that ConfigMap through `related` (a selector by name), so
//! the host hands it over read-only and reconciles the parent again when it changes; the hash of its
//! data goes into a pod-template annotation, so an edit rolls the pods.
//!
//! A missing ConfigMap is a state, not an error: the Deployment is still wanted (its volume marked
//! optional), the annotation says `missing`, and `status.configMap` is `Missing` until it appears,
//! which reconciles the parent since the selector names it. `spec.configMapNamespace` reads it from
//! another namespace: the host refuses that for a namespaced parent, with a condition saying why, and
//! for a cluster-scoped parent (whose Deployment goes to the namespace `spec.namespace` names) unless
//! its children may go there.

#[cfg(target_arch = "wasm32")]
mod component;

use serde_json::{Value, json};

/// The annotation on the pod template that rolls the pods when the configuration changes.
pub const HASH_ANNOTATION: &str = "example.com/config-hash";

/// One object the parent depends on, as `related` asks for it.
#[derive(Debug, PartialEq)]
pub struct Wanted {
    pub kind: &'static str,
    pub namespace: Option<String>,
    pub name: String,
}

/// The desired children (JSON objects) and status of one reconcile.
#[derive(Debug, Default, PartialEq)]
pub struct Output {
    pub children: Vec<String>,
    pub status: Option<String>,
    pub finalized: bool,
}

/// What `parent` depends on: the ConfigMap its spec names.
pub fn related(parent: &str) -> Result<Vec<Wanted>, String> {
    let parent: Value = serde_json::from_str(parent).map_err(|e| format!("parent: {e}"))?;
    let spec = &parent["spec"];
    let name = config_map_name(spec)?;
    Ok(vec![Wanted {
        kind: "ConfigMap",
        namespace: spec["configMapNamespace"].as_str().map(String::from),
        name: name.to_string(),
    }])
}

pub fn reconcile(parent: &str, related: &[String], finalizing: bool) -> Result<Output, String> {
    // Nothing to clean up: the host deletes the Deployment with its owner. Never block deletion.
    if finalizing {
        let finalized = true;
        return Ok(Output {
            finalized,
            ..Output::default()
        });
    }
    let parent: Value = serde_json::from_str(parent).map_err(|e| format!("parent: {e}"))?;
    let text = |pointer: &str| {
        parent
            .pointer(pointer)
            .and_then(Value::as_str)
            .filter(|text| !text.is_empty())
    };
    let name = text("/metadata/name").ok_or("parent has no metadata.name")?;
    // A cluster-scoped parent has no namespace of its own: it names its Deployment's.
    let namespace = text("/metadata/namespace")
        .or_else(|| text("/spec/namespace"))
        .unwrap_or("default");
    let image = text("/spec/image").ok_or("spec.image is required")?;
    let config_map = config_map_name(&parent["spec"])?;
    let replicas = match parent.pointer("/spec/replicas") {
        None | Some(Value::Null) => 1,
        Some(value) => value
            .as_i64()
            .filter(|r| (0..=100).contains(r))
            .ok_or("spec.replicas must be an integer from 0 to 100")?,
    };
    let found = find_config_map(related, config_map)?;
    let hash = found
        .as_ref()
        .map_or_else(|| "missing".to_string(), config_hash);
    let labels =
        json!({"app.kubernetes.io/name": "configured", "app.kubernetes.io/instance": name});
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels, "annotations": {HASH_ANNOTATION: hash}},
                "spec": {
                    "containers": [{
                        "name": "app", "image": image,
                        "volumeMounts": [{"name": "config", "mountPath": "/etc/config", "readOnly": true}],
                    }],
                    // Optional: the pods start without it, and roll once it exists.
                    "volumes": [{"name": "config", "configMap": {"name": config_map, "optional": true}}],
                },
            },
        },
    });
    let status = json!({
        "configMap": if found.is_some() { "Found" } else { "Missing" },
        "configHash": hash,
    });
    Ok(Output {
        children: vec![deployment.to_string()],
        status: Some(status.to_string()),
        finalized: false,
    })
}

fn config_map_name(spec: &Value) -> Result<&str, String> {
    spec["configMapName"]
        .as_str()
        .filter(|name| !name.is_empty())
        .ok_or_else(|| "spec.configMapName is required".to_string())
}

/// The ConfigMap `name` among the related objects, if the host found it.
fn find_config_map(related: &[String], name: &str) -> Result<Option<Value>, String> {
    for object in related {
        let object: Value = serde_json::from_str(object).map_err(|e| format!("related: {e}"))?;
        if object["kind"] == "ConfigMap" && object["metadata"]["name"] == name {
            return Ok(Some(object));
        }
    }
    Ok(None)
}

/// A stable hash of the ConfigMap's data (serde_json's maps are sorted: key order does not matter).
fn config_hash(config_map: &Value) -> String {
    let content = json!([config_map["data"], config_map["binaryData"]]).to_string();
    let hash = content
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        });
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ConfiguredApp `team-c/shop` with `spec`.
    fn app(spec: Value) -> String {
        let mut app = json!({"apiVersion": "example.com/v1alpha1", "kind": "ConfiguredApp"});
        app["metadata"] = json!({"name": "shop", "namespace": "team-c"});
        app["spec"] = spec;
        app.to_string()
    }

    fn config_map(data: Value) -> String {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "shop-config", "namespace": "team-c"}, "data": data})
        .to_string()
    }

    fn hash_and_status(related: &[String]) -> (Value, Value) {
        let spec = json!({"image": "nginx:1.27", "configMapName": "shop-config"});
        let out = reconcile(&app(spec), related, false).unwrap();
        let deployment: Value = serde_json::from_str(&out.children[0]).unwrap();
        let status: Value = serde_json::from_str(out.status.as_deref().unwrap()).unwrap();
        (
            deployment["spec"]["template"]["metadata"]["annotations"][HASH_ANNOTATION].clone(),
            status["configMap"].clone(),
        )
    }

    #[test]
    fn asks_for_the_config_map_its_spec_names() {
        let wanted = related(&app(json!({"configMapName": "shop-config"}))).unwrap();
        assert_eq!(
            wanted,
            [Wanted {
                kind: "ConfigMap",
                namespace: None,
                name: "shop-config".into()
            }]
        );
        assert!(related(&app(json!({}))).is_err());
    }

    #[test]
    fn a_cluster_scoped_parent_names_the_namespace_of_its_deployment() {
        let tenant = json!({"apiVersion": "example.com/v1alpha1", "kind": "Tenant",
            "metadata": {"name": "shop"},
            "spec": {"image": "nginx:1.27", "configMapName": "shop-config", "namespace": "team-c"}});
        let out = reconcile(&tenant.to_string(), &[], false).unwrap();
        let deployment: Value = serde_json::from_str(&out.children[0]).unwrap();
        assert_eq!(deployment["metadata"]["namespace"], "team-c");
    }

    #[test]
    fn new_data_rolls_the_pods_and_a_missing_config_map_is_a_status() {
        let (one, found) = hash_and_status(&[config_map(json!({"a": "1"}))]);
        let (two, _) = hash_and_status(&[config_map(json!({"a": "2"}))]);
        assert_eq!(found, "Found");
        assert_ne!(one, two);
        assert_eq!(one, hash_and_status(&[config_map(json!({"a": "1"}))]).0);
        let (missing, status) = hash_and_status(&[]);
        assert_eq!((missing, status), (json!("missing"), json!("Missing")));
    }
}
