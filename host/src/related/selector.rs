//! A module's selectors checked against what the operator allows, and matched against objects.

use std::borrow::Borrow;
use std::collections::HashSet;

use kube::core::DynamicObject;

use crate::guest::Selector;
use crate::kind::Gvk;
use crate::selector::{LabelSelector, SelectorError as LabelSelectorError};

/// A selector that passed `check`: an allow-listed kind, in the parent's namespace (any namespace it
/// names, for a cluster-scoped parent).
#[derive(Clone, Debug)]
pub struct RelatedSelector {
    pub kind: Gvk,
    pub namespace: String,
    /// Empty: any name.
    pub names: Vec<String>,
    pub labels: Option<LabelSelector>,
}

/// Why a module's selectors were refused; nothing is read and the parent is not reconciled.
#[derive(Debug, thiserror::Error)]
pub enum SelectorError {
    #[error(
        "related selector {index} names {kind}, which is not allow-listed for reading (allowed: {allowed}); the operator allows a kind with --related GROUP/VERSION/KIND (a Reconciler: spec.related)"
    )]
    NotAllowed {
        index: usize,
        kind: Gvk,
        allowed: String,
    },
    #[error(
        "related selector {index} reads namespace {namespace}, but a parent in namespace {parent_namespace} may only read its own"
    )]
    OtherNamespace {
        index: usize,
        namespace: String,
        parent_namespace: String,
    },
    #[error("related selector {index}: `{api_version}` `{kind}` is not a kind: {reason}")]
    BadKind {
        index: usize,
        api_version: String,
        kind: String,
        reason: String,
    },
    #[error(
        "related selector {index} names no namespace, which a cluster-scoped parent's selectors must"
    )]
    NoNamespace { index: usize },
    #[error("related selector {index}: {error}")]
    BadLabels {
        index: usize,
        error: LabelSelectorError,
    },
}

impl SelectorError {
    /// A short CamelCase word for conditions, Events and metrics.
    pub fn reason(&self) -> &'static str {
        match self {
            SelectorError::NotAllowed { .. } | SelectorError::OtherNamespace { .. } => {
                "RelatedNotAllowed"
            }
            SelectorError::NoNamespace { .. }
            | SelectorError::BadKind { .. }
            | SelectorError::BadLabels { .. } => "RelatedInvalid",
        }
    }
}

/// Checks the module's `selectors` for a parent in `parent_namespace`: each kind in `allowed` (`None`:
/// no allow-list, as `render` without `--related`), each namespace the parent's. A cluster-scoped parent
/// (`parent_namespace` `None`) has no namespace of its own: its selectors name one, any one.
pub fn check(
    selectors: &[Selector],
    parent_namespace: Option<&str>,
    allowed: Option<&[Gvk]>,
) -> Result<Vec<RelatedSelector>, SelectorError> {
    selectors
        .iter()
        .enumerate()
        .map(|(index, selector)| {
            let kind: Gvk = format!("{}/{}", selector.api_version, selector.kind)
                .parse()
                .map_err(|e: crate::kind::ParseGvkError| SelectorError::BadKind {
                    index,
                    api_version: selector.api_version.clone(),
                    kind: selector.kind.clone(),
                    reason: e.to_string(),
                })?;
            if let Some(allowed) = allowed.filter(|allowed| !allowed.contains(&kind)) {
                let list: Vec<String> = allowed.iter().map(Gvk::to_string).collect();
                return Err(SelectorError::NotAllowed {
                    index,
                    kind,
                    allowed: if list.is_empty() {
                        "none".into()
                    } else {
                        list.join(", ")
                    },
                });
            }
            let namespace = match (selector.namespace.as_deref(), parent_namespace) {
                (None, None) => return Err(SelectorError::NoNamespace { index }),
                (Some(namespace), None) => namespace,
                (None, Some(own)) => own,
                (Some(namespace), Some(own)) if namespace == own => own,
                (Some(namespace), Some(own)) => {
                    return Err(SelectorError::OtherNamespace {
                        index,
                        namespace: namespace.to_string(),
                        parent_namespace: own.to_string(),
                    });
                }
            };
            let labels = selector
                .label_selector
                .as_deref()
                .map(|text| {
                    text.parse::<LabelSelector>()
                        .map_err(|error| SelectorError::BadLabels { index, error })
                })
                .transpose()?;
            Ok(RelatedSelector {
                kind,
                namespace: namespace.to_string(),
                names: selector.names.clone(),
                labels,
            })
        })
        .collect()
}

impl RelatedSelector {
    /// Whether `object` is one this selector selects: its kind, namespace, one of its names (if any)
    /// and its labels (if a label selector is given).
    pub fn matches(&self, object: &DynamicObject) -> bool {
        let meta = &object.metadata;
        let kind_matches = object
            .types
            .as_ref()
            .is_some_and(|types| self.kind.matches(&types.api_version, &types.kind));
        let name = meta.name.as_deref().unwrap_or_default();
        kind_matches
            && meta.namespace.as_deref() == Some(self.namespace.as_str())
            && (self.names.is_empty() || self.names.iter().any(|n| n == name))
            && self
                .labels
                .as_ref()
                .is_none_or(|labels| labels.matches(meta.labels.as_ref()))
    }
}

/// The objects of `candidates` (for each selector, the objects it may select) that any of `selectors`
/// selects, each once, in selector order then name order: the same objects give the same request.
pub fn select<O: Borrow<DynamicObject>>(
    selectors: &[RelatedSelector],
    candidates: impl Fn(&RelatedSelector) -> Vec<O>,
) -> Vec<O> {
    let mut seen = HashSet::new();
    let mut selected = Vec::new();
    for selector in selectors {
        let mut matching: Vec<O> = candidates(selector)
            .into_iter()
            .filter(|object| selector.matches(object.borrow()))
            .collect();
        matching.sort_by(|a, b| a.borrow().metadata.name.cmp(&b.borrow().metadata.name));
        for object in matching {
            let meta = &object.borrow().metadata;
            let key = (
                selector.kind.clone(),
                meta.namespace.clone(),
                meta.name.clone(),
            );
            if seen.insert(key) {
                selected.push(object);
            }
        }
    }
    selected
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn selector(api_version: &str, kind: &str, namespace: Option<&str>) -> Selector {
        Selector {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: namespace.map(Into::into),
            names: vec!["settings".into()],
            label_selector: None,
        }
    }

    fn object(kind: &str, namespace: &str, name: &str) -> DynamicObject {
        serde_json::from_value(json!({"apiVersion": "v1", "kind": kind,
            "metadata": {"name": name, "namespace": namespace}}))
        .unwrap()
    }

    #[test]
    fn only_allow_listed_kinds_in_the_parents_namespace_pass() {
        let allowed = ["v1/ConfigMap".parse().unwrap()];
        let ok = check(
            &[selector("v1", "ConfigMap", None)],
            Some("team-a"),
            Some(&allowed),
        )
        .unwrap();
        assert_eq!(ok[0].namespace, "team-a");
        let secret = check(
            &[selector("v1", "Secret", None)],
            Some("team-a"),
            Some(&allowed),
        );
        let message = secret.unwrap_err().to_string();
        assert!(message.contains("v1/Secret") && message.contains("allowed: v1/ConfigMap"));
        let other = check(
            &[selector("v1", "ConfigMap", Some("team-b"))],
            Some("team-a"),
            Some(&allowed),
        );
        assert_eq!(other.unwrap_err().reason(), "RelatedNotAllowed");
    }

    #[test]
    fn a_cluster_scoped_parent_names_the_namespace_it_reads() {
        let anywhere = check(&[selector("v1", "ConfigMap", Some("team-b"))], None, None).unwrap();
        assert_eq!(anywhere[0].namespace, "team-b");
        let nowhere = check(&[selector("v1", "ConfigMap", None)], None, None).unwrap_err();
        assert_eq!(nowhere.reason(), "RelatedInvalid");
        assert!(nowhere.to_string().contains("cluster-scoped"), "{nowhere}");
    }

    #[test]
    fn matching_takes_kind_namespace_names_and_labels() {
        let checked = check(&[selector("v1", "ConfigMap", None)], Some("team-a"), None).unwrap();
        let objects = [
            object("ConfigMap", "team-a", "settings"),
            object("ConfigMap", "team-a", "other"),
            object("ConfigMap", "team-b", "settings"),
            object("Secret", "team-a", "settings"),
        ];
        let selected = select(&checked, |_| objects.iter().collect());
        assert_eq!(selected.len(), 1);
        assert!(std::ptr::eq(selected[0], &objects[0]));
        let twice = [checked.clone(), checked].concat();
        assert_eq!(select(&twice, |_| objects.iter().collect()).len(), 1);
    }
}
