//! Who made a child: the names the host writes on everything it makes, and the identity of one
//! reconciler among the many a cluster (or one `serve`) may run.
//!
//! Why each reconciler needs its own: the caches are scoped by label, and a reconciler acts on what
//! its caches hold. With only the generic managed-by label, two decorators of one kind (`team=a` and
//! `team=b` Namespaces) each saw the other's children, found their parents unselected and released
//! them, and the other re-created them at once. Each child now also names its reconciler in a label
//! whose value is derived here (label values are at most 63 characters of `[A-Za-z0-9._-]`); a name
//! that does not fit is shortened with a hash, and the full name goes into an annotation. Labels stay
//! no boundary (the controller ownerReference is): they only decide what a reconciler looks at.

use std::fmt;

use sha2::{Digest as _, Sha256};

use crate::kind::Gvk;
pub use crate::names::{
    DRAIN_LABEL_PREFIX, LEASE_PREFIX, MANAGED_BY_LABEL, MANAGER, MOVED_ANNOTATION_PREFIX,
    RECONCILER_ANNOTATION, RECONCILER_LABEL, SHARD_LABEL_PREFIX,
};
use crate::selector::LabelSelector;

/// Whether a managedFields `entry` is one of the host's on the object itself (not on a subresource):
/// what the caches keep of an object's managedFields, and when the host last changed it.
pub fn is_host_entry(
    entry: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry,
) -> bool {
    entry.manager.as_deref() == Some(MANAGER)
        && entry.subresource.as_deref().unwrap_or_default().is_empty()
}

/// The longest label value Kubernetes accepts.
const MAX_LABEL_VALUE: usize = 63;
/// Hex digits of sha256 kept in a shortened label: 40 bits, enough that two reconcilers of one
/// cluster do not meet by chance.
const HASH_HEX: usize = 10;
/// Hex digits of sha256 of a `run` decorator's selector in its default name.
const SELECTOR_HASH_HEX: usize = 8;

/// The identity of one reconciler: its full name, and the label value its children carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    name: String,
    label: String,
}

impl Identity {
    /// The identity named `name` (a `run` name, `r.<namespace>.<name>`, `c.<name>`).
    pub fn new(name: impl Into<String>) -> Identity {
        let name = name.into();
        let label = label_value(&name);
        Identity { name, label }
    }

    /// A namespaced `Reconciler`'s: `r.<namespace>.<name>`.
    pub fn reconciler(namespace: &str, name: &str) -> Identity {
        Identity::new(format!("r.{namespace}.{name}"))
    }

    /// A `ClusterReconciler`'s: `c.<name>`.
    pub fn cluster_reconciler(name: &str) -> Identity {
        Identity::new(format!("c.{name}"))
    }

    /// The default name of `run`: the parent kind, lowercased, and for a decorator a hash of its
    /// selector, so that two decorators of one kind with different selectors differ without `--name`.
    pub fn run_default(parent: &Gvk, selector: Option<&LabelSelector>) -> String {
        let kind = parent.kind.to_lowercase();
        match selector {
            None => kind,
            Some(selector) => {
                let hash = hex(selector.to_string().trim().as_bytes());
                format!("{kind}-{}", &hash[..SELECTOR_HASH_HEX])
            }
        }
    }

    /// The full name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The value of [`RECONCILER_LABEL`] on its children.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Whether the label is a shortened form of the name (the children then carry the name in
    /// [`RECONCILER_ANNOTATION`]).
    pub fn shortened(&self) -> bool {
        self.label != self.name
    }

    /// The label selector of its own children.
    pub fn own_children(&self) -> String {
        format!(
            "{MANAGED_BY_LABEL}={MANAGER},{RECONCILER_LABEL}={}",
            self.label
        )
    }

    /// The key of the label that assigns a parent to one member of its ring (`crate::shard`): named
    /// after the reconciler, so two reconcilers of one kind shard their parents independently. A label
    /// value is a valid label name, so the key is valid whatever the reconciler's name.
    pub fn shard_label(&self) -> String {
        format!("{SHARD_LABEL_PREFIX}{}", self.label)
    }

    /// The key of the label by which the ring's leader asks a member to release a parent.
    pub fn drain_label(&self) -> String {
        format!("{DRAIN_LABEL_PREFIX}{}", self.label)
    }

    /// The key of the annotation naming the member a parent last left.
    pub fn moved_annotation(&self) -> String {
        format!("{MOVED_ANNOTATION_PREFIX}{}", self.label)
    }

    /// The label selector of children made before children named their reconciler: the generic
    /// label only. Which of them are a reconciler's to take is decided by their parent (`observe`).
    pub fn unnamed_children() -> String {
        format!("{MANAGED_BY_LABEL}={MANAGER},!{RECONCILER_LABEL}")
    }
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// A `run --name`: a DNS subdomain short enough to name the default Lease
/// (`reconcile-host-<name>`), as Kubernetes names objects.
pub fn parse_run_name(text: &str) -> Result<String, String> {
    let max = 253 - LEASE_PREFIX.len();
    let valid_chars = text
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if text.is_empty() || text.len() > max {
        return Err(format!("a name has 1 to {max} characters"));
    }
    if !valid_chars || !alnum(text.chars().next()) || !alnum(text.chars().last()) {
        return Err(
            "a name has lowercase letters, digits, `-` and `.`, and begins and ends with a letter or digit"
                .into(),
        );
    }
    Ok(text.to_string())
}

/// `name` as a label value: itself if it is one, else shortened with a hash of the whole name. A
/// reconciler's identity and a ring member's name (`crate::shard`) are written so.
pub fn label_value(name: &str) -> String {
    match is_label_value(name) {
        true => name.to_string(),
        false => shortened(name),
    }
}

/// Whether `value` is a label value Kubernetes accepts (and not empty).
fn is_label_value(value: &str) -> bool {
    let inner = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    let ends = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    !value.is_empty()
        && value.len() <= MAX_LABEL_VALUE
        && value.chars().all(inner)
        && ends(value.chars().next())
        && ends(value.chars().last())
}

/// A label value for a name that is not one: its beginning (other characters as `-`), then a hash
/// of the whole name, which tells apart names that differ only past the beginning.
fn shortened(name: &str) -> String {
    let hash = hex(name.as_bytes());
    let hash = &hash[..HASH_HEX];
    let keep = MAX_LABEL_VALUE - 1 - HASH_HEX;
    let prefix: String = name
        .chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                true => c,
                false => '-',
            },
        )
        .take(keep)
        .collect();
    let prefix = prefix.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    match prefix.is_empty() {
        true => hash.to_string(),
        false => format!("{prefix}-{hash}"),
    }
}

fn hex(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_are_their_own_label() {
        let id = Identity::reconciler("team-a", "myapp");
        assert_eq!(
            (id.name(), id.label()),
            ("r.team-a.myapp", "r.team-a.myapp")
        );
        assert!(!id.shortened());
        assert_eq!(Identity::cluster_reconciler("deco").label(), "c.deco");
        assert_eq!(
            Identity::new("namespace-1a2b3c4d").label(),
            "namespace-1a2b3c4d"
        );
    }

    #[test]
    fn long_names_are_shortened_within_the_label_rules_and_stay_apart() {
        let namespace = "n".repeat(63);
        let base = "a".repeat(200);
        let ids: Vec<_> = ["x", "y", "z."]
            .iter()
            .map(|end| Identity::reconciler(&namespace, &format!("{base}{end}")))
            .collect();
        for id in &ids {
            assert!(id.shortened(), "{id}");
            assert!(is_label_value(id.label()), "{}", id.label());
            assert_eq!(id.label().len(), MAX_LABEL_VALUE);
            assert!(id.label().starts_with("r.nnn"), "{}", id.label());
        }
        assert_ne!(ids[0].label(), ids[1].label());
        assert_ne!(ids[1].label(), ids[2].label());
        // The same name gives the same label: a restart finds its children.
        assert_eq!(
            ids[0].label(),
            Identity::reconciler(&namespace, &format!("{base}x")).label()
        );
    }

    #[test]
    fn any_name_gives_a_valid_label() {
        let dashes = "-".repeat(80);
        for name in ["", "/", "-a-", "Ünïcode name", "a b", dashes.as_str(), "a_"] {
            let id = Identity::new(name);
            assert!(is_label_value(id.label()), "{name:?} -> {:?}", id.label());
        }
        assert!(is_label_value(Identity::new("A_b.c").label()));
        assert!(!Identity::new("A_b.c").shortened());
    }

    #[test]
    fn run_names_default_to_the_kind_and_differ_by_selector() {
        let kind: Gvk = "v1/Namespace".parse().unwrap();
        assert_eq!(Identity::run_default(&kind, None), "namespace");
        let a: LabelSelector = "team=a".parse().unwrap();
        let b: LabelSelector = "team=b".parse().unwrap();
        let (a, b) = (
            Identity::run_default(&kind, Some(&a)),
            Identity::run_default(&kind, Some(&b)),
        );
        assert_ne!(a, b);
        assert!(
            a.starts_with("namespace-") && a.len() == "namespace-".len() + 8,
            "{a}"
        );
        assert_eq!(parse_run_name(&a), Ok(a));
    }

    #[test]
    fn run_names_are_object_names() {
        assert!(parse_run_name("team-a.decorator").is_ok());
        let long = "a".repeat(240);
        for bad in ["", "Team", "a_b", "-a", "a.", long.as_str()] {
            assert!(parse_run_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_selectors_take_own_and_unnamed_children() {
        let id = Identity::cluster_reconciler("deco");
        assert_eq!(
            id.own_children(),
            "app.kubernetes.io/managed-by=reconcile-host,reconcile-host.dev/reconciler=c.deco"
        );
        assert_eq!(
            Identity::unnamed_children(),
            "app.kubernetes.io/managed-by=reconcile-host,!reconcile-host.dev/reconciler"
        );
    }

    #[test]
    fn the_shard_and_drain_labels_name_the_reconciler() {
        let id = Identity::reconciler("team-a", "myapp");
        assert_eq!(id.shard_label(), "shard.reconcile-host.dev/r.team-a.myapp");
        assert_eq!(id.drain_label(), "drain.reconcile-host.dev/r.team-a.myapp");
        // Two reconcilers of one kind: two keys, so each shards its parents on its own.
        let other = Identity::reconciler("team-b", "myapp");
        assert_ne!(id.shard_label(), other.shard_label());
        // A shortened identity still gives a key whose name part is a label name (the value rules).
        let long = Identity::reconciler(&"n".repeat(63), &"a".repeat(200));
        let name = long.shard_label();
        let name = name.strip_prefix(SHARD_LABEL_PREFIX).unwrap();
        assert!(
            is_label_value(name) && name.len() <= MAX_LABEL_VALUE,
            "{name}"
        );
    }
}
