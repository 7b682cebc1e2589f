//! Which cached children each parent controls, so that a reconcile finds its own without scanning the
//! cache. A scan reads every cached child at each reconcile, under the cache's lock: its cost grows
//! with the parents, and so the whole convergence grew faster than the parents did.
//!
//! The child watch keeps the index as the cache changes (`sync::settle`) and rebuilds it at each list.
//! An entry is only a pointer into the cache, checked on every read: an object that changed controller
//! or went away while the watch was down is dropped then, never returned.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

use kube::api::ApiResource;
use kube::core::DynamicObject;
use kube::runtime::reflector::ObjectRef;

/// A child's `(namespace, name)`.
type Key = (String, String);

/// The cached children of one kind, by the UID of their controller ownerReference.
#[derive(Default)]
pub struct OwnerIndex {
    by_owner: Mutex<HashMap<String, BTreeSet<Key>>>,
}

impl OwnerIndex {
    /// Indexes an object the cache now holds.
    pub fn insert(&self, object: &DynamicObject) {
        if let Some((uid, key)) = entry(object) {
            let mut by_owner = self.by_owner.lock().expect("owner index lock poisoned");
            by_owner.entry(uid.to_owned()).or_default().insert(key);
        }
    }

    /// Forgets an object the cache no longer holds.
    pub fn remove(&self, object: &DynamicObject) {
        if let Some((uid, key)) = entry(object) {
            let mut by_owner = self.by_owner.lock().expect("owner index lock poisoned");
            if let Some(keys) = by_owner.get_mut(uid) {
                keys.remove(&key);
                if keys.is_empty() {
                    by_owner.remove(uid);
                }
            }
        }
    }

    /// Indexes exactly `objects`: what the cache holds after a list.
    pub fn rebuild<'a>(&self, objects: impl IntoIterator<Item = &'a DynamicObject>) {
        let mut by_owner = HashMap::<String, BTreeSet<Key>>::new();
        for (uid, key) in objects.into_iter().filter_map(entry) {
            by_owner.entry(uid.to_owned()).or_default().insert(key);
        }
        *self.by_owner.lock().expect("owner index lock poisoned") = by_owner;
    }

    /// What `lookup` finds for each child indexed under `uid`, in name order. `lookup` checks the
    /// cache: an entry it finds nothing for (gone, or controlled by another now) is dropped.
    pub fn owned<T>(&self, uid: &str, mut lookup: impl FnMut(&str, &str) -> Option<T>) -> Vec<T> {
        let mut by_owner = self.by_owner.lock().expect("owner index lock poisoned");
        let Some(keys) = by_owner.get_mut(uid) else {
            return Vec::new();
        };
        let mut found = Vec::with_capacity(keys.len());
        keys.retain(|(namespace, name)| match lookup(namespace, name) {
            Some(object) => {
                found.push(object);
                true
            }
            None => false,
        });
        if keys.is_empty() {
            by_owner.remove(uid);
        }
        found
    }
}

/// The controller UID of `object` and its key, if something controls it.
fn entry(object: &DynamicObject) -> Option<(&str, Key)> {
    let uid = controller_uid(object)?;
    let namespace = object.metadata.namespace.clone().unwrap_or_default();
    Some((uid, (namespace, object.metadata.name.clone()?)))
}

/// The controller ownerReference of an object, if it has one: the ownership rule decides on it, and
/// the owner index keys on it.
pub fn controller_of(
    object: &DynamicObject,
) -> Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference> {
    object
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
}

/// The UID in the controller ownerReference of `object`, if it has one.
pub fn controller_uid(object: &DynamicObject) -> Option<&str> {
    controller_of(object).map(|o| o.uid.as_str())
}

/// The parents of kind `parent` that `child`'s ownerReferences name. kube-runtime's `owns` gives every
/// owner the child's namespace, which finds no cluster-scoped parent in the cache: such an owner is
/// named without one.
pub fn owners_of(
    child: &DynamicObject,
    parent: &ApiResource,
    cluster_scoped: bool,
) -> Vec<ObjectRef<DynamicObject>> {
    let namespace = child
        .metadata
        .namespace
        .as_deref()
        .filter(|_| !cluster_scoped);
    let references = child.metadata.owner_references.iter().flatten();
    references
        .filter_map(|owner| ObjectRef::from_owner_ref(namespace, owner, parent.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn child(name: &str, controller: &str) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "ns", "ownerReferences": [
                {"apiVersion": "example.com/v1", "kind": "MyApp", "name": "p",
                 "uid": controller, "controller": true}]},
        }))
        .unwrap()
    }

    fn names(index: &OwnerIndex, uid: &str, cache: &[DynamicObject]) -> Vec<String> {
        index.owned(uid, |namespace, name| {
            cache
                .iter()
                .find(|o| {
                    o.metadata.name.as_deref() == Some(name)
                        && o.metadata.namespace.as_deref() == Some(namespace)
                        && controller_uid(o) == Some(uid)
                })
                .map(|o| o.metadata.name.clone().unwrap())
        })
    }

    #[test]
    fn a_parent_finds_its_children_and_no_others() {
        let index = OwnerIndex::default();
        let cache = [child("b", "u1"), child("a", "u1"), child("c", "u2")];
        cache.iter().for_each(|c| index.insert(c));
        assert_eq!(names(&index, "u1", &cache), ["a", "b"]);
        assert_eq!(names(&index, "u2", &cache), ["c"]);
        assert!(names(&index, "u3", &cache).is_empty());
        index.remove(&cache[0]);
        assert_eq!(names(&index, "u1", &cache), ["a"]);
    }

    #[test]
    fn an_entry_the_cache_no_longer_backs_is_dropped() {
        let index = OwnerIndex::default();
        index.insert(&child("a", "u1"));
        // The cache now says another parent controls it (adopted while the watch was down).
        let cache = [child("a", "u2")];
        assert!(names(&index, "u1", &cache).is_empty());
        assert!(index.by_owner.lock().unwrap().is_empty());
    }

    #[test]
    fn a_rebuild_holds_exactly_the_list() {
        let index = OwnerIndex::default();
        index.insert(&child("gone", "u1"));
        let cache = [child("kept", "u1")];
        index.rebuild(&cache);
        assert_eq!(index.by_owner.lock().unwrap()["u1"].len(), 1);
        assert_eq!(names(&index, "u1", &cache), ["kept"]);
    }
}
