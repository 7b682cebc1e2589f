//! What the host writes for a child: the guest's object with the parent as its controller and the
//! host's labels. Part of the decision, so that the live and the dry-run executors write the same.

use serde_json::{Value, json};

use super::super::error::{ReconcileError, name_of};
use crate::identity::{
    Identity, MANAGED_BY_LABEL, MANAGER, RECONCILER_ANNOTATION, RECONCILER_LABEL,
};
use crate::validate::Child;

use kube::core::DynamicObject;

/// What the host applies for `child`: the guest's object with the parent as controller, the
/// managed-by label and the label naming its reconciler `identity` (labels only scope the caches;
/// they grant nothing), the reconciler's full name where the label had to shorten it, and the
/// `member`'s labels of a sharded reconciler (`crate::shard::Member::child_labels`).
pub fn apply_body(
    owner: &Value,
    child: &Child,
    identity: &Identity,
    member: &[(&str, &str)],
) -> Value {
    let mut object = child.object.clone();
    let metadata = &mut object["metadata"];
    metadata["ownerReferences"] = json!([owner]);
    if !metadata["labels"].is_object() {
        metadata["labels"] = json!({});
    }
    metadata["labels"][MANAGED_BY_LABEL] = json!(MANAGER);
    metadata["labels"][RECONCILER_LABEL] = json!(identity.label());
    for (key, value) in member {
        metadata["labels"][*key] = json!(value);
    }
    if identity.shortened() {
        if !metadata["annotations"].is_object() {
            metadata["annotations"] = json!({});
        }
        metadata["annotations"][RECONCILER_ANNOTATION] = json!(identity.name());
    }
    object
}

/// The controller ownerReference, so that garbage collection removes children with their parent.
pub fn owner_reference(parent: &DynamicObject) -> Result<Value, ReconcileError> {
    let types = parent
        .types
        .as_ref()
        .ok_or(ReconcileError::MissingMetadata("apiVersion/kind"))?;
    Ok(json!({
        "apiVersion": types.api_version,
        "kind": types.kind,
        "name": name_of(parent)?,
        "uid": parent.metadata.uid.as_ref().ok_or(ReconcileError::MissingMetadata("uid"))?,
        "controller": true,
        "blockOwnerDeletion": true,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn child(labels: Value) -> Child {
        Child {
            kind: "v1/ConfigMap".parse().unwrap(),
            name: "c".into(),
            object: json!({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "c", "namespace": "ns", "labels": labels}}),
        }
    }

    #[test]
    fn every_child_names_its_reconciler_whatever_the_guest_wrote() {
        let owner = json!({"uid": "u"});
        let forged = child(json!({RECONCILER_LABEL: "c.another", "app": "x"}));
        let body = apply_body(&owner, &forged, &Identity::cluster_reconciler("mine"), &[]);
        let labels = &body["metadata"]["labels"];
        assert_eq!(labels[RECONCILER_LABEL], "c.mine");
        assert_eq!(labels[MANAGED_BY_LABEL], MANAGER);
        assert_eq!(labels["app"], "x");
        assert!(body["metadata"].get("annotations").is_none());
    }

    #[test]
    fn a_shortened_identity_is_written_in_full_as_an_annotation() {
        let identity = Identity::reconciler("team-a", &"long-name.".repeat(20));
        assert!(identity.shortened());
        let body = apply_body(&json!({"uid": "u"}), &child(json!(null)), &identity, &[]);
        let metadata = &body["metadata"];
        assert_eq!(metadata["labels"][RECONCILER_LABEL], identity.label());
        assert_eq!(
            metadata["annotations"][RECONCILER_ANNOTATION],
            identity.name()
        );
    }
}
