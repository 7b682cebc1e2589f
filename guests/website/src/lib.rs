//! The second example reconciler, beside MyApp: a `Website` (`spec.title`, `spec.html`, `spec.replicas`,
//! default 1) wants three children of two API groups:
//! - ConfigMap `<name>-content` holding `index.html`;
//! - Deployment `<name>` running nginx, serving that ConfigMap, and rolled when the content changes
//!   (a content hash in the pod template);
//! - Service `<name>` on port 80.
//!
//! Its status: `phase` `Pending` until the observed Deployment has all replicas ready, then `Serving`,
//! and `url`, the in-cluster address. Plain `serde_json` values: the logic is small and not on a hot path.

#[cfg(target_arch = "wasm32")]
mod component;

use serde_json::{Value, json};

/// The desired children (JSON objects) and status of one reconcile.
#[derive(Debug, Default, PartialEq)]
pub struct Output {
    pub children: Vec<String>,
    pub status: Option<String>,
    pub finalized: bool,
}

pub fn reconcile(parent: &str, children: &[String], finalizing: bool) -> Result<Output, String> {
    if finalizing {
        return Ok(Output {
            finalized: true,
            ..Output::default()
        });
    }
    let parent: Value = serde_json::from_str(parent).map_err(|e| format!("parent: {e}"))?;
    let name = parent["metadata"]["name"]
        .as_str()
        .ok_or("parent has no metadata.name")?;
    let namespace = parent["metadata"]["namespace"]
        .as_str()
        .unwrap_or("default");
    let spec = &parent["spec"];
    let title = spec["title"].as_str().unwrap_or(name);
    let replicas = match &spec["replicas"] {
        Value::Null => 1,
        value => value
            .as_i64()
            .filter(|r| (0..=100).contains(r))
            .ok_or("spec.replicas must be an integer from 0 to 100")?,
    };
    let html = match spec["html"].as_str() {
        Some(html) => html.to_string(),
        None => format!(
            "<!doctype html><title>{title}</title><h1>{title}</h1>\n",
            title = escape(title)
        ),
    };
    let labels = json!({"app.kubernetes.io/name": "website", "app.kubernetes.io/instance": name});
    let content = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("{name}-content"), "namespace": namespace, "labels": labels},
        "data": {"index.html": html},
    });
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {
                    "labels": labels,
                    // A new hash rolls the pods, so they serve the new content.
                    "annotations": {"example.com/content-hash": format!("{:016x}", fnv1a(&html))},
                },
                "spec": {
                    "containers": [{
                        "name": "web", "image": "nginx:alpine",
                        "ports": [{"containerPort": 80}],
                        "volumeMounts": [{"name": "content", "mountPath": "/usr/share/nginx/html"}],
                    }],
                    "volumes": [{"name": "content", "configMap": {"name": format!("{name}-content")}}],
                },
            },
        },
    });
    let service = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"selector": labels, "ports": [{"name": "http", "port": 80, "targetPort": 80}]},
    });
    let ready = ready_replicas(children, name)?;
    let status = json!({
        "phase": if ready >= replicas && ready > 0 || replicas == 0 { "Serving" } else { "Pending" },
        "readyReplicas": ready,
        "url": format!("http://{name}.{namespace}.svc"),
    });
    Ok(Output {
        children: [content, deployment, service]
            .iter()
            .map(Value::to_string)
            .collect(),
        status: Some(status.to_string()),
        finalized: false,
    })
}

/// The ready replicas of the observed Deployment `name`, 0 if there is none yet.
fn ready_replicas(children: &[String], name: &str) -> Result<i64, String> {
    for child in children {
        let child: Value = serde_json::from_str(child).map_err(|e| format!("child: {e}"))?;
        if child["kind"] == "Deployment" && child["metadata"]["name"] == name {
            return Ok(child["status"]["readyReplicas"].as_i64().unwrap_or(0));
        }
    }
    Ok(0)
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A stable hash of the content (the std hasher's output may change between releases).
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn website(spec: Value) -> String {
        json!({"apiVersion": "example.com/v1alpha1", "kind": "Website",
               "metadata": {"name": "docs", "namespace": "team-b"}, "spec": spec})
        .to_string()
    }

    fn children(out: &Output) -> Vec<Value> {
        out.children
            .iter()
            .map(|c| serde_json::from_str(c).unwrap())
            .collect()
    }

    #[test]
    fn wants_content_deployment_and_service() {
        let out = reconcile(&website(json!({"title": "Docs <1>"})), &[], false).unwrap();
        let kinds: Vec<Value> = children(&out).iter().map(|c| c["kind"].clone()).collect();
        assert_eq!(
            kinds,
            [json!("ConfigMap"), json!("Deployment"), json!("Service")]
        );
        let content = &children(&out)[0];
        assert_eq!(content["metadata"]["name"], "docs-content");
        assert!(
            content["data"]["index.html"]
                .as_str()
                .unwrap()
                .contains("Docs &lt;1&gt;")
        );
        let status: Value = serde_json::from_str(out.status.as_deref().unwrap()).unwrap();
        assert_eq!(status["phase"], "Pending");
        assert_eq!(status["url"], "http://docs.team-b.svc");
    }

    #[test]
    fn serves_once_the_deployment_is_ready() {
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "docs"}, "status": {"readyReplicas": 2}})
        .to_string();
        let out = reconcile(&website(json!({"replicas": 2})), &[deployment], false).unwrap();
        let status: Value = serde_json::from_str(out.status.as_deref().unwrap()).unwrap();
        assert_eq!(status["phase"], "Serving");
    }

    #[test]
    fn new_content_rolls_the_pods() {
        let hash = |html: &str| {
            let out = reconcile(&website(json!({"html": html})), &[], false).unwrap();
            children(&out)[1]["spec"]["template"]["metadata"]["annotations"].clone()
        };
        assert_ne!(hash("<p>one</p>"), hash("<p>two</p>"));
        assert_eq!(hash("<p>one</p>"), hash("<p>one</p>"));
    }

    #[test]
    fn a_bad_spec_is_named_and_deletion_is_never_blocked() {
        let error = reconcile(&website(json!({"replicas": -1})), &[], false).unwrap_err();
        assert!(error.contains("spec.replicas"), "{error}");
        let out = reconcile(&website(json!({"replicas": -1})), &[], true).unwrap();
        assert!(out.finalized && out.children.is_empty());
    }
}
