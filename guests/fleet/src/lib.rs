//! A fleet of identical children, the example of child update strategies (`examples/fleet/`): a
//! `Fleet` (`fleet.example.com/v1`) with `spec.image` and `spec.zones` gets one Deployment
//! `<fleet>-<zone>` per zone, each running `spec.image` on the nodes labelled for its zone
//! (`fleet.example.com/zone-<zone>: "true"`). A new image is a changed desired state for every child at
//! once: how it reaches them (all at once, one zone at a time behind a readiness check, ...) is the
//! host's update strategy for Deployments, not the guest's concern.

#[cfg(target_arch = "wasm32")]
mod component;

use serde_json::{Value, json};

/// The label of the nodes a zone's Deployment runs on.
pub fn zone_label(zone: &str) -> String {
    format!("fleet.example.com/zone-{zone}")
}

/// The desired Deployments, and the status: the zones and the image they should run.
pub fn reconcile(parent: &str) -> Result<(Vec<Value>, Value), String> {
    let parent: Value = serde_json::from_str(parent).map_err(|e| format!("parent: {e}"))?;
    let name = parent["metadata"]["name"]
        .as_str()
        .ok_or("parent has no metadata.name")?;
    let spec = &parent["spec"];
    let image = spec["image"].as_str().ok_or("spec.image is required")?;
    let zones: Vec<&str> = match spec["zones"].as_array() {
        Some(zones) => zones.iter().filter_map(Value::as_str).collect(),
        None => return Err("spec.zones must be a list of zone names".into()),
    };
    let children = zones
        .iter()
        .map(|zone| {
            let app = format!("{name}-{zone}");
            json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": app, "labels": {"app": app}},
                "spec": {
                    "replicas": 1,
                    // Ready means the new pod runs: no old pod counts as available meanwhile.
                    "strategy": {"rollingUpdate": {"maxUnavailable": 0}},
                    "selector": {"matchLabels": {"app": app}},
                    "template": {
                        "metadata": {"labels": {"app": app}},
                        "spec": {
                            "nodeSelector": {zone_label(zone): "true"},
                            "containers": [{"name": "app", "image": image}],
                        },
                    },
                },
            })
        })
        .collect();
    Ok((children, json!({"zones": zones.len(), "image": image})))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_deployment_per_zone_pinned_to_its_zone() {
        let fleet = json!({"metadata": {"name": "web"},
                           "spec": {"image": "nginx:1.27", "zones": ["a", "b"]}});
        let (children, status) = reconcile(&fleet.to_string()).unwrap();
        assert_eq!(children.len(), 2);
        assert_eq!(children[1]["metadata"]["name"], "web-b");
        let pod = &children[1]["spec"]["template"]["spec"];
        assert_eq!(pod["nodeSelector"][zone_label("b")], "true");
        assert_eq!(pod["containers"][0]["image"], "nginx:1.27");
        assert_eq!(status, json!({"zones": 2, "image": "nginx:1.27"}));
    }

    #[test]
    fn a_fleet_without_image_or_zones_is_refused() {
        let bad = json!({"metadata": {"name": "web"}, "spec": {"zones": ["a"]}});
        assert!(reconcile(&bad.to_string()).is_err());
        let bad = json!({"metadata": {"name": "web"}, "spec": {"image": "x"}});
        assert!(reconcile(&bad.to_string()).is_err());
    }
}
