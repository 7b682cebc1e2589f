//! A module's selectors checked against what the operator allows, and matched against objects.
//!
//! Reads are bounded like writes: a selector may name only a namespace the parent's children may go to
//! (its [`Placement`], the one the child validation uses), so that a cluster-scoped parent whose
//! children are confined to some namespaces cannot read every namespace of the cluster.

use std::borrow::Borrow;
use std::collections::HashSet;

use kube::core::DynamicObject;

use crate::guest::Selector;
use crate::kind::Gvk;
use crate::selector::{LabelSelector, SelectorError as LabelSelectorError};
use crate::validate::{Placement, Rule};

/// A selector that passed `check`: an allow-listed kind, in a namespace the parent's children may go
/// to (the parent's own, for a namespaced parent).
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
        "related selector {index} reads namespace {namespace}, where this parent's children may not go ({allowed}): a cluster-scoped parent reads only in the namespaces its children may live in; the operator allows more with --child-namespace or --child-namespace-selector (a ClusterReconciler: spec.childNamespaces, spec.childNamespaceSelector)"
    )]
    OutsideChildNamespaces {
        index: usize,
        namespace: String,
        allowed: String,
    },
    #[error(
        "related selector {index} names no namespace, which a cluster-scoped parent's selectors must ({allowed})"
    )]
    NoNamespace { index: usize, allowed: String },
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
            SelectorError::NotAllowed { .. }
            | SelectorError::OtherNamespace { .. }
            | SelectorError::OutsideChildNamespaces { .. } => "RelatedNotAllowed",
            SelectorError::NoNamespace { .. }
            | SelectorError::BadKind { .. }
            | SelectorError::BadLabels { .. } => "RelatedInvalid",
        }
    }
}

/// Checks the module's `selectors` for a parent whose children go where `placement` says: each kind in
/// `allowed` (`None`: no allow-list, as `render` without `--related`), each namespace one the children
/// may go to. A selector without a namespace reads the parent's own (a namespaced parent's, or a
/// Namespace parent's without `--child-namespace`); a cluster-scoped parent's children may go to
/// several, so its selectors name one.
pub fn check(
    selectors: &[Selector],
    placement: &Placement,
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
            let namespace = placement
                .namespace_of(selector.namespace.as_deref())
                .map_err(|rule| refused_namespace(index, rule))?;
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
                namespace,
                names: selector.names.clone(),
                labels,
            })
        })
        .collect()
}

/// The refusal of selector `index`, from the rule its namespace breaks for a child.
fn refused_namespace(index: usize, rule: Rule) -> SelectorError {
    match rule {
        Rule::OtherNamespace { namespace, parent } => SelectorError::OtherNamespace {
            index,
            namespace,
            parent_namespace: parent,
        },
        Rule::NoNamespace { allowed } => SelectorError::NoNamespace { index, allowed },
        Rule::NamespaceNotAllowed { namespace, allowed } => SelectorError::OutsideChildNamespaces {
            index,
            namespace,
            allowed,
        },
        Rule::OutsideParentNamespace { namespace, parent } => {
            SelectorError::OutsideChildNamespaces {
                index,
                namespace,
                allowed: format!("only Namespace {parent} itself: no --child-namespace was given"),
            }
        }
        other => unreachable!("a namespace is refused by a namespace rule, not {other:?}"),
    }
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

    fn own(namespace: &str) -> Placement {
        Placement::ParentNamespace(namespace.into())
    }

    #[test]
    fn only_allow_listed_kinds_pass() {
        let allowed = ["v1/ConfigMap".parse().unwrap()];
        let ok = check(
            &[selector("v1", "ConfigMap", None)],
            &own("team-a"),
            Some(&allowed),
        )
        .unwrap();
        assert_eq!(ok[0].namespace, "team-a");
        let secret = check(
            &[selector("v1", "Secret", None)],
            &own("team-a"),
            Some(&allowed),
        );
        let message = secret.unwrap_err().to_string();
        assert!(message.contains("v1/Secret") && message.contains("allowed: v1/ConfigMap"));
    }

    /// Reads are bounded like writes: a selector reads only where the parent's children may go.
    #[test]
    fn a_selector_reads_only_where_the_parents_children_may_go() {
        let named = Placement::Allowed {
            namespaces: ["team-a".to_string(), "team-b".to_string()].into(),
            rule: "--child-namespace team-a, team-b".into(),
        };
        // `--child-namespace-selector team` with one namespace labelled so.
        let labelled = Placement::Allowed {
            namespaces: ["team-x".to_string()].into(),
            rule: "--child-namespace-selector team".into(),
        };
        let itself = Placement::ParentItself("tenant-a".into());
        // The namespace read, or the refusal's reason and what its message must name.
        type Want = Result<&'static str, (&'static str, &'static [&'static str])>;
        // (placement, the namespace the selector names, what comes of it)
        let cases: [(&Placement, Option<&str>, Want); 13] = [
            (&own("team-a"), None, Ok("team-a")),
            (&own("team-a"), Some("team-a"), Ok("team-a")),
            (
                &own("team-a"),
                Some("team-b"),
                Err(("RelatedNotAllowed", &["team-b", "may only read its own"])),
            ),
            (&named, Some("team-b"), Ok("team-b")),
            (&named, Some("team-a"), Ok("team-a")),
            (
                &named,
                Some("kube-system"),
                Err((
                    "RelatedNotAllowed",
                    &["namespace kube-system", "--child-namespace team-a, team-b"],
                )),
            ),
            (
                &named,
                None,
                Err(("RelatedInvalid", &["cluster-scoped", "--child-namespace"])),
            ),
            (&labelled, Some("team-x"), Ok("team-x")),
            (
                &labelled,
                Some("team-y"),
                Err((
                    "RelatedNotAllowed",
                    &["namespace team-y", "--child-namespace-selector team"],
                )),
            ),
            (&itself, None, Ok("tenant-a")),
            (&itself, Some("tenant-a"), Ok("tenant-a")),
            (
                &itself,
                Some("default"),
                Err((
                    "RelatedNotAllowed",
                    &["namespace default", "tenant-a itself"],
                )),
            ),
            (
                &itself,
                Some("kube-system"),
                Err(("RelatedNotAllowed", &["spec.childNamespaces"])),
            ),
        ];
        for (placement, namespace, want) in cases {
            let got = check(&[selector("v1", "ConfigMap", namespace)], placement, None);
            let case = format!("{placement:?} reading {namespace:?}");
            match (got, want) {
                (Ok(checked), Ok(read)) => assert_eq!(checked[0].namespace, read, "{case}"),
                (Err(e), Err((reason, named))) => {
                    assert_eq!(e.reason(), reason, "{case}: {e}");
                    let message = e.to_string();
                    for part in named {
                        assert!(message.contains(part), "{case}: {message} lacks {part}");
                    }
                }
                (got, want) => panic!("{case}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn matching_takes_kind_namespace_names_and_labels() {
        let checked = check(&[selector("v1", "ConfigMap", None)], &own("team-a"), None).unwrap();
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

#[cfg(test)]
mod fuzz_tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;

    /// A module's selectors: kinds and namespaces mostly of the few that matter, anything else too.
    fn selectors() -> impl Strategy<Value = Vec<Selector>> {
        let word = |known: &'static [&'static str]| {
            prop_oneof![
                3 => proptest::sample::select(known).prop_map(str::to_string),
                1 => crate::fuzz::text("a-zA-Z0-9./-"),
            ]
        };
        let selector = (
            word(&["v1", "apps/v1", "example.com/v1", ""]),
            word(&["ConfigMap", "Secret", "Deployment", ""]),
            proptest::option::of(word(&["team-a", "team-b", "kube-system", ""])),
            proptest::collection::vec(crate::fuzz::text("a-z0-9.-"), 0..3),
            proptest::option::of(crate::fuzz::text("a-z0-9=!,()./ _-")),
        )
            .prop_map(
                |(api_version, kind, namespace, names, label_selector)| Selector {
                    api_version,
                    kind,
                    namespace,
                    names,
                    label_selector,
                },
            );
        proptest::collection::vec(selector, 0..4)
    }

    /// Where a parent's children (and so its reads) may go: its namespace, itself, or a list.
    fn placement() -> impl Strategy<Value = Placement> {
        prop_oneof![
            Just(Placement::ParentNamespace("team-a".into())),
            Just(Placement::ParentItself("team-a".into())),
            Just(Placement::Allowed {
                namespaces: BTreeSet::from(["team-a".to_string(), "team-b".to_string()]),
                rule: "--child-namespace team-a, team-b".into(),
            }),
        ]
    }

    proptest! {
        #![proptest_config(crate::fuzz::config())]

        /// Any selectors are checked or refused with a reason; what passes reads an allowed kind, and
        /// only where the parent's children may go.
        #[test]
        fn fuzz_related_selectors_are_checked_or_refused(
            selectors in selectors(),
            placement in placement(),
        ) {
            let allowed: Vec<Gvk> = vec!["v1/ConfigMap".parse().unwrap()];
            match check(&selectors, &placement, Some(&allowed)) {
                Ok(checked) => {
                    prop_assert_eq!(checked.len(), selectors.len());
                    for selector in checked {
                        prop_assert!(allowed.contains(&selector.kind));
                        let may_go = match &placement {
                            Placement::ParentNamespace(ns) | Placement::ParentItself(ns) => {
                                selector.namespace == *ns
                            }
                            Placement::Allowed { namespaces, .. } => {
                                namespaces.contains(&selector.namespace)
                            }
                        };
                        prop_assert!(may_go, "{} read outside {placement:?}", selector.namespace);
                    }
                }
                Err(error) => prop_assert!(!error.to_string().is_empty()),
            }
        }
    }
}
