//! The parents as the ring's leader knows them: for each, what its assignment is decided on (its key,
//! UID, version, and the member its labels name), folded from kube-runtime's watcher of the parents'
//! metadata, as a reflector folds it: a relist replaces the table whole once complete.
//!
//! Why not a reflector's store: it holds each object whole (an `ObjectMeta` of some twenty fields and
//! a map of labels, even trimmed) under a key that repeats its names, version, UID and kind: about
//! 2 KB a parent, which made the ring's leader 20 MiB bigger than the other replicas at 10,000
//! parents (`make bench`). A mark is about a tenth of that.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use kube::ResourceExt;
use kube::core::{DynamicObject, PartialObjectMeta};
use kube::runtime::watcher::Event;

/// A parent as the leader watches it: its metadata only.
pub type Meta = PartialObjectMeta<DynamicObject>;

/// A parent as the leader decides on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mark {
    pub uid: Box<str>,
    pub version: Box<str>,
    /// The member its shard label names: one name of a few, shared by its thousands of parents.
    pub member: Option<Arc<str>>,
    /// Whether it carries the drain label.
    pub draining: bool,
}

/// The parents' marks, by key (`namespace/name`, or `name`: what the hash places).
pub struct Marks {
    shard_label: String,
    drain_label: String,
    parents: HashMap<Box<str>, Mark>,
    /// A relist under way: what will replace `parents` once it is complete.
    relisting: Option<HashMap<Box<str>, Mark>>,
    /// The member names the marks share (those of gone members are dropped at each relist).
    members: HashSet<Arc<str>>,
}

impl Marks {
    /// An empty table of parents, which read their member from `shard_label` and whether they
    /// drain from `drain_label`.
    pub fn new(shard_label: &str, drain_label: &str) -> Marks {
        Marks {
            shard_label: shard_label.to_string(),
            drain_label: drain_label.to_string(),
            parents: HashMap::new(),
            relisting: None,
            members: HashSet::new(),
        }
    }

    /// Applies one event of the parents' watch.
    pub fn apply(&mut self, event: Event<Meta>) {
        match event {
            Event::Apply(parent) => {
                if let Some((key, mark)) = self.mark(&parent) {
                    self.parents.insert(key, mark);
                }
            }
            Event::Delete(parent) => {
                self.parents.remove(key(&parent).as_str());
            }
            Event::Init => self.relisting = Some(HashMap::new()),
            Event::InitApply(parent) => {
                if let Some((key, mark)) = self.mark(&parent) {
                    self.relisting.get_or_insert_default().insert(key, mark);
                }
            }
            Event::InitDone => {
                if let Some(listed) = self.relisting.take() {
                    self.parents = listed;
                    let named: HashSet<&Arc<str>> = self
                        .parents
                        .values()
                        .filter_map(|m| m.member.as_ref())
                        .collect();
                    let names = std::mem::take(&mut self.members);
                    self.members = names.into_iter().filter(|n| named.contains(n)).collect();
                }
            }
        }
    }

    /// Every parent: its key and mark.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Mark)> {
        self.parents.iter().map(|(key, mark)| (&**key, mark))
    }

    fn mark(&mut self, parent: &Meta) -> Option<(Box<str>, Mark)> {
        let labels = parent.labels();
        let member = (labels.get(&self.shard_label)).map(|name| self.member(name));
        let mark = Mark {
            uid: parent.metadata.uid.as_deref()?.into(),
            version: parent.metadata.resource_version.as_deref()?.into(),
            member,
            draining: labels.contains_key(&self.drain_label),
        };
        Some((key(parent).into(), mark))
    }

    /// The shared name `name`.
    fn member(&mut self, name: &str) -> Arc<str> {
        if let Some(shared) = self.members.get(name) {
            return shared.clone();
        }
        let shared: Arc<str> = name.into();
        self.members.insert(shared.clone());
        shared
    }
}

/// A parent's key: `namespace/name`, or `name` when cluster-scoped.
fn key(parent: &Meta) -> String {
    match parent.namespace() {
        Some(namespace) => format!("{namespace}/{}", parent.name_any()),
        None => parent.name_any(),
    }
}

/// The namespace (none: cluster-scoped) and name of the parent with `key`.
pub fn located(key: &str) -> (Option<&str>, &str) {
    match key.split_once('/') {
        Some((namespace, name)) => (Some(namespace), name),
        None => (None, key),
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::parent;
    use super::*;

    const SHARD: &str = "shard.reconcile-host.dev/myapp";
    const DRAIN: &str = "drain.reconcile-host.dev/myapp";

    fn keys(marks: &Marks) -> Vec<&str> {
        let mut keys: Vec<&str> = marks.iter().map(|(key, _)| key).collect();
        keys.sort();
        keys
    }

    #[test]
    fn a_mark_keeps_what_the_assignment_is_decided_on() {
        let mut marks = Marks::new(SHARD, DRAIN);
        let labels = [(SHARD, "a"), (DRAIN, "true"), ("team", "x")];
        marks.apply(Event::Apply(parent("app", "7", &labels)));
        let (key, mark) = marks.iter().next().expect("marked");
        assert_eq!(key, "ns/app");
        assert_eq!(located(key), (Some("ns"), "app"));
        assert_eq!(located("cluster-wide"), (None, "cluster-wide"));
        let expected = Mark {
            uid: "uid-app".into(),
            version: "7".into(),
            member: Some("a".into()),
            draining: true,
        };
        assert_eq!(mark, &expected);
        marks.apply(Event::Apply(parent("other", "8", &[(SHARD, "a")])));
        let names: Vec<_> = marks.iter().filter_map(|(_, m)| m.member.clone()).collect();
        assert!(Arc::ptr_eq(&names[0], &names[1]), "one name, shared");
    }

    #[test]
    fn events_apply_as_a_reflector_applies_them_a_relist_replacing_the_table_once_complete() {
        let mut marks = Marks::new(SHARD, DRAIN);
        marks.apply(Event::Apply(parent("a", "1", &[])));
        marks.apply(Event::Apply(parent("b", "1", &[])));
        marks.apply(Event::Apply(parent("b", "2", &[(SHARD, "m")])));
        marks.apply(Event::Delete(parent("a", "3", &[])));
        assert_eq!(keys(&marks), ["ns/b"]);
        assert_eq!(marks.iter().next().unwrap().1.version.as_ref(), "2");

        marks.apply(Event::Init);
        marks.apply(Event::InitApply(parent("c", "4", &[])));
        assert_eq!(
            keys(&marks),
            ["ns/b"],
            "the table stands until the relist is complete"
        );
        marks.apply(Event::InitDone);
        assert_eq!(keys(&marks), ["ns/c"], "b went while the watch was down");
        assert!(marks.members.is_empty(), "no parent names m any more");
    }
}
