//! Fixtures of the decision's table tests: a parent, its children as the caches hold them, the guest's
//! answers and the host's rules. No API server: the caches are filled as the watches would fill them.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ApiResource;
use kube::core::DynamicObject;
use kube::runtime::watcher;
use serde_json::{Value, json};

use super::super::observe::children::{Caches, Observed, observe_children};
use super::super::observe::kinds::{ChildKind, ResolvedKind};
use crate::guest::{Answer, Selector};
use crate::identity::{MANAGED_BY_LABEL, MANAGER};
use crate::validate::{Placement, Rules};

/// The UID of the parent the fixtures reconcile.
pub const PARENT_UID: &str = "p-uid";

/// The parent `ns/app` (a MyApp), with `finalizers`.
pub fn parent(finalizers: &[&str]) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1alpha1", "kind": "MyApp",
        "metadata": {"name": "app", "namespace": "ns", "uid": PARENT_UID, "generation": 1,
                     "finalizers": finalizers},
        "spec": {},
    }))
    .unwrap()
}

/// A ConfigMap `ns/name` as stored, controlled by the parent with `controller` (none: uncontrolled).
pub fn configmap(name: &str, controller: Option<&str>) -> DynamicObject {
    let owners = match controller {
        Some(uid) => json!([{"apiVersion": "example.com/v1alpha1", "kind": "MyApp",
                             "name": "other", "uid": uid, "controller": true}]),
        None => json!([]),
    };
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                     "resourceVersion": "7", "labels": {MANAGED_BY_LABEL: MANAGER},
                     "ownerReferences": owners},
    }))
    .unwrap()
}

/// A child the guest wants: a ConfigMap `name` in the parent's namespace.
pub fn desired(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}})
}

/// The guest's answer with `children` and nothing else.
pub fn answer(children: Vec<Value>) -> Answer {
    Answer {
        children,
        status: None,
        requeue_after: None,
        finalized: false,
    }
}

/// The ConfigMap child kind with its caches filled.
pub struct Kinds(Vec<ChildKind>);

impl Kinds {
    /// What a reconcile of the parent with `uid` in `ns` observes.
    pub fn observe(&self, uid: &str) -> Vec<Observed<'_>> {
        observe_children(&self.0, Some("ns"), uid, Caches::OwnAndLegacy)
    }

    /// The cached ConfigMap `name` in `ns`, as the ownership rule reads it.
    pub fn cached(&self, name: &str) -> Option<std::sync::Arc<DynamicObject>> {
        self.0[0].cached("ns", name)
    }
}

/// A ConfigMap child kind whose own cache holds `children`: (name, controller UID; `None`:
/// uncontrolled).
pub fn cached(children: &[(&str, Option<&str>)]) -> Kinds {
    let kind = ResolvedKind {
        gvk: "v1/ConfigMap".parse().unwrap(),
        resource: ApiResource::erase::<ConfigMap>(&()),
    };
    let (child, [mut own, _legacy]) = ChildKind::new(kind);
    for (name, controller) in children {
        let object = configmap(name, *controller);
        own.apply_watcher_event(&watcher::Event::Apply(object.clone()));
        child.own.owned.insert(&object);
    }
    Kinds(vec![child])
}

/// A ConfigMap child kind whose own cache holds `children` (name, controller UID).
pub fn observed_in(children: &[(&str, &str)]) -> Kinds {
    let children: Vec<_> = children.iter().map(|(n, uid)| (*n, Some(*uid))).collect();
    cached(&children)
}

/// The rules of a reconciler whose only child kind is ConfigMap.
pub fn rules() -> Rules {
    Rules::new(Some(vec!["v1/ConfigMap".parse().unwrap()]))
}

/// Where the parent's children go: its own namespace.
pub fn placement() -> Placement {
    Placement::ParentNamespace("ns".into())
}

/// A related selector of `api_version` `kind` in `namespace`.
pub fn selector(api_version: &str, kind: &str, namespace: Option<&str>) -> Selector {
    Selector {
        api_version: api_version.into(),
        kind: kind.into(),
        namespace: namespace.map(Into::into),
        names: vec!["settings".into()],
        label_selector: None,
    }
}
