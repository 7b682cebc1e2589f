//! A decorator reconciler: a parent of a kind it does not own (a Namespace, or any cluster-scoped
//! object) labelled `team=<name>` gets, in its target namespace:
//! - ResourceQuota `team-quota`: at most 20 pods, 4 CPUs and 8 GiB of memory requested;
//! - NetworkPolicy `team-isolation`: ingress only from namespaces of the same team.
//!
//! The target namespace is the Namespace itself; the annotation
//! `namespace-decorator.example.com/namespace` names another (the way a cluster-scoped parent other than
//! a Namespace says where its children go; the host refuses one outside what its operator allowed).
//! When the label goes the host makes a finalize call: the guest answers no children and `finalized`,
//! and logs that it finalized (a signal the end-to-end test reads). Its status (`{"team": ...}`) is for
//! `render`: a decorating host writes no status on a kind it does not own.

#[cfg(target_arch = "wasm32")]
mod component;

use serde_json::{Value, json};

/// The label that selects a parent and names its team.
pub const TEAM_LABEL: &str = "team";
/// The annotation naming the namespace the children go to, if not the parent itself.
pub const NAMESPACE_ANNOTATION: &str = "namespace-decorator.example.com/namespace";

/// The desired children (JSON objects), status, and a line for the host's log.
#[derive(Debug, Default, PartialEq)]
pub struct Output {
    pub children: Vec<Value>,
    pub status: Option<String>,
    pub finalized: bool,
    pub log: Option<String>,
}

pub fn reconcile(parent: &str, finalizing: bool) -> Result<Output, String> {
    let parent: Value = serde_json::from_str(parent).map_err(|e| format!("parent: {e}"))?;
    let metadata = &parent["metadata"];
    let name = metadata["name"]
        .as_str()
        .ok_or("parent has no metadata.name")?;
    if finalizing {
        return Ok(Output {
            finalized: true,
            log: Some(format!("finalized {name}: its quota and network policy go")),
            ..Output::default()
        });
    }
    let team = metadata["labels"][TEAM_LABEL]
        .as_str()
        .filter(|team| !team.is_empty())
        .ok_or_else(|| format!("{name} has no `{TEAM_LABEL}` label value"))?;
    let namespace = metadata["annotations"][NAMESPACE_ANNOTATION]
        .as_str()
        .unwrap_or(name);
    let labels = json!({"app.kubernetes.io/part-of": "namespace-decorator", TEAM_LABEL: team});
    let quota = json!({
        "apiVersion": "v1", "kind": "ResourceQuota",
        "metadata": {"name": "team-quota", "namespace": namespace, "labels": labels},
        "spec": {"hard": {"pods": "20", "requests.cpu": "4", "requests.memory": "8Gi"}},
    });
    let policy = json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": "team-isolation", "namespace": namespace, "labels": labels},
        "spec": {
            "podSelector": {},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {TEAM_LABEL: team}}}]}],
        },
    });
    Ok(Output {
        children: vec![quota, policy],
        status: Some(json!({"team": team}).to_string()),
        ..Output::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn namespace(labels: Value, annotations: Value) -> String {
        json!({"apiVersion": "v1", "kind": "Namespace",
               "metadata": {"name": "payments", "labels": labels, "annotations": annotations}})
        .to_string()
    }

    #[test]
    fn a_team_namespace_gets_a_quota_and_a_network_policy_in_itself() {
        let out = reconcile(&namespace(json!({"team": "pay"}), json!({})), false).unwrap();
        let children = &out.children;
        assert_eq!(children.len(), 2);
        assert_eq!(children[0]["kind"], "ResourceQuota");
        assert_eq!(children[1]["kind"], "NetworkPolicy");
        for child in children {
            assert_eq!(child["metadata"]["namespace"], "payments");
        }
        let from = &children[1]["spec"]["ingress"][0]["from"][0];
        assert_eq!(from["namespaceSelector"]["matchLabels"]["team"], "pay");
    }

    #[test]
    fn the_annotation_moves_the_children() {
        let annotations = json!({NAMESPACE_ANNOTATION: "elsewhere"});
        let out = reconcile(&namespace(json!({"team": "pay"}), annotations), false).unwrap();
        assert_eq!(out.children[0]["metadata"]["namespace"], "elsewhere");
    }

    #[test]
    fn finalizing_answers_no_children_and_says_so() {
        let out = reconcile(&namespace(json!({}), json!({})), true).unwrap();
        assert!(out.finalized && out.children.is_empty());
        assert!(out.log.unwrap().starts_with("finalized payments"));
    }

    #[test]
    fn a_parent_without_a_team_is_an_error() {
        let err = reconcile(&namespace(json!({"team": ""}), json!({})), false).unwrap_err();
        assert!(err.contains("team"), "{err}");
    }
}
