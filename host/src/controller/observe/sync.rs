//! Caches that are complete before a reconcile reads them, and triggers that wait for the cache.
//!
//! kube-runtime's reflector makes a list (the first one, or a re-list after a reconnect or 410 Gone)
//! visible all at once, at `InitDone`, while its `touched_objects()` passes each listed object on as
//! it arrives: the reconcile such a trigger starts reads the cache as it was *before* the list, and
//! nothing triggers the parent again once the list lands. `settle` holds a list's triggers until the
//! cache holds it, then emits every listed object and every object the list dropped.
//!
//! List responses also carry no `apiVersion`/`kind` on the items of built-in kinds (watch events do):
//! a Deployment cached from a list had no `kind`, so a guest looking for its Deployment found none and
//! reported a stale status after every restart. `watch_cache` writes the type back on every object.

use std::collections::HashSet;
use std::sync::Arc;

use futures::{Stream, StreamExt, stream};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::core::{DynamicObject, TypeMeta};
use kube::runtime::reflector::{self, Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};

use super::super::context::Context;
use super::kinds::ResolvedKind;
use super::owner_index::OwnerIndex;
use crate::identity::is_host_entry;

/// Whether a cache has finished its first list; any number of tasks may wait for it.
///
/// Why not `Store::wait_until_ready`: kube-runtime's Controller waits on the parent store with it, and
/// a second waiter on the same store is not reliably woken.
#[derive(Clone)]
pub struct Listed(tokio::sync::watch::Sender<bool>);

impl Default for Listed {
    fn default() -> Self {
        Listed(tokio::sync::watch::Sender::new(false))
    }
}

impl Listed {
    pub fn new() -> Self {
        Listed::default()
    }

    fn set(&self) {
        self.0
            .send_if_modified(|listed| !std::mem::replace(listed, true));
    }

    /// Resolves once the cache has listed (at once if it has).
    pub async fn wait(&self) {
        let mut rx = self.0.subscribe();
        // The sender lives in `self`: waiting cannot fail while we hold it.
        let _ = rx.wait_for(|listed| *listed).await;
    }
}

/// One watch of `kind` that fills `writer`'s cache (and `index`, for a child kind), and the objects
/// whose change may concern a parent: each `Apply`/`Delete` at once, each list once the cache holds it
/// (`settle`). `listed` is set at the end of the first list. Watch errors are retried with backoff and
/// recorded in the health.
pub fn watch_cache(
    ctx: &Arc<Context>,
    kind: &ResolvedKind,
    writer: Writer<DynamicObject>,
    config: watcher::Config,
    listed: Listed,
    index: Option<Arc<OwnerIndex>>,
) -> impl Stream<Item = Result<DynamicObject, watcher::Error>> + Send + use<> {
    let health = ctx.clone();
    // A child deleted by anyone (the garbage collector, with its parent) leaves the skipped-apply
    // memory; without this, every child ever applied would stay in it.
    let forget = index.is_some().then(|| (ctx.clone(), kind.gvk.clone()));
    let types = kind.type_meta();
    let api = ctx.api_all(kind);
    let store = writer.as_reader();
    let watch = watcher(api, config)
        .inspect(move |event| {
            if let Err(error) = event {
                let kind = watch_error_kind(error);
                health.metrics.watch_error(kind);
                tracing::debug!(kind, error = %chain(error), "watch error; retried with backoff");
            }
            health
                .health
                .watch_result(event.as_ref().err().map(|e| e.to_string()));
        })
        .default_backoff()
        .modify(move |obj: &mut DynamicObject| as_cached(obj, &types))
        .inspect(move |event| {
            if let (Some((ctx, gvk)), Ok(event)) = (&forget, event) {
                ctx.applied.forget_deleted(gvk, event);
            }
        });
    settle(reflector::reflector(writer, watch), store, listed, index)
}

/// `error` with every source it wraps: a transport error's cause is several layers down.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// What kind of watch error `error` is, as `reconcile_host_watch_errors_total` counts it.
fn watch_error_kind(error: &watcher::Error) -> &'static str {
    let code = match error {
        watcher::Error::WatchError(status) => Some(status.code),
        watcher::Error::InitialListFailed(e)
        | watcher::Error::WatchStartFailed(e)
        | watcher::Error::WatchFailed(e) => match e {
            kube::Error::Api(status) => Some(status.code),
            _ => None,
        },
        watcher::Error::NoResourceVersion => return "api",
    };
    match code {
        Some(410) => "expired",
        Some(403) => "forbidden",
        Some(_) => "api",
        None => "transport",
    }
}

/// An object as the caches hold it: typed, and without its managedFields, which are most of a small
/// object's size; only the host's own entries of the object itself stay, without their fields: its
/// `Update` entry as the mark of a child whose fields still wait to move to the host's apply manager
/// (`create::take_fields`), and the time of each, when the host last changed the object (what a
/// rolling update's deadline counts from, `decide::update`).
pub fn as_cached(object: &mut DynamicObject, types: &TypeMeta) {
    object.types = Some(types.clone());
    let entries = object.metadata.managed_fields.take().unwrap_or_default();
    let ours: Vec<_> = (entries.into_iter())
        .filter(is_host_entry)
        .map(|entry| ManagedFieldsEntry {
            fields_v1: None,
            ..entry
        })
        .collect();
    object.metadata.managed_fields = (!ours.is_empty()).then_some(ours);
}

/// Whether `entry` is the host's `Update` entry of the object itself (not of a subresource): what a
/// POST of the host wrote, not yet moved to the host's `Apply` entry.
pub fn is_pending(entry: &ManagedFieldsEntry) -> bool {
    is_host_entry(entry) && entry.operation.as_deref() == Some("Update")
}

/// Whether an object (as cached: entries without their fields) still has the host's `Update` entry.
pub fn pending_update(object: &DynamicObject) -> bool {
    object
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .any(is_pending)
}

/// The objects of `events` that may concern a parent, once `store` holds them: a list's objects are
/// held from `Init` to `InitDone`, then emitted with the ones the list dropped (deleted while the
/// watch was down), so that every parent a list touches is reconciled on the complete list. `index`
/// follows the cache: each object as it lands or goes, rebuilt when a list lands.
fn settle<S>(
    events: S,
    store: Store<DynamicObject>,
    listed: Listed,
    index: Option<Arc<OwnerIndex>>,
) -> impl Stream<Item = Result<DynamicObject, watcher::Error>> + Send + 'static
where
    S: Stream<Item = Result<watcher::Event<DynamicObject>, watcher::Error>> + Send + 'static,
{
    // What the cache held when the current list began: the objects it may drop.
    let mut before: Option<Vec<Arc<DynamicObject>>> = None;
    events
        .map(move |event| {
            let out: Vec<Result<DynamicObject, watcher::Error>> = match event {
                Err(e) => vec![Err(e)],
                Ok(watcher::Event::Apply(obj)) => {
                    index.iter().for_each(|index| index.insert(&obj));
                    vec![Ok(obj)]
                }
                Ok(watcher::Event::Delete(obj)) => {
                    index.iter().for_each(|index| index.remove(&obj));
                    vec![Ok(obj)]
                }
                Ok(watcher::Event::Init) => {
                    before = Some(store.state());
                    Vec::new()
                }
                Ok(watcher::Event::InitApply(_)) => Vec::new(),
                Ok(watcher::Event::InitDone) => {
                    let now = store.state();
                    if let Some(index) = &index {
                        index.rebuild(now.iter().map(|obj| obj.as_ref()));
                    }
                    listed.set();
                    listed_and_dropped(&now, before.take().unwrap_or_default())
                }
            };
            stream::iter(out)
        })
        .flatten()
}

/// Every object of the new list, then every object of `before` that it no longer holds.
fn listed_and_dropped(
    now: &[Arc<DynamicObject>],
    before: Vec<Arc<DynamicObject>>,
) -> Vec<Result<DynamicObject, watcher::Error>> {
    let key = |obj: &DynamicObject| (obj.metadata.namespace.clone(), obj.metadata.name.clone());
    let present: HashSet<_> = now.iter().map(|obj| key(obj)).collect();
    let dropped = before
        .into_iter()
        .filter(|obj| !present.contains(&key(obj)));
    now.iter()
        .cloned()
        .chain(dropped)
        .map(|obj| Ok(Arc::unwrap_or_clone(obj)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::{ApiResource, ObjectMeta};

    fn object(name: &str) -> Arc<DynamicObject> {
        Arc::new(DynamicObject {
            types: None,
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                ..ObjectMeta::default()
            },
            data: serde_json::Value::Null,
        })
    }

    fn names(out: Vec<Result<DynamicObject, watcher::Error>>) -> Vec<String> {
        out.into_iter()
            .map(|obj| obj.unwrap().metadata.name.unwrap())
            .collect()
    }

    #[test]
    fn a_list_emits_what_it_holds_then_what_it_dropped() {
        let now = [object("kept"), object("new")];
        let before = vec![object("kept"), object("deleted-while-down")];
        assert_eq!(
            names(listed_and_dropped(&now, before)),
            ["kept", "new", "deleted-while-down"]
        );
    }

    /// Each emitted object with the number of objects the cache held when it was emitted.
    async fn settled(
        events: Vec<watcher::Event<DynamicObject>>,
        listed: &Listed,
    ) -> Vec<(String, usize)> {
        let writer = Writer::new(ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(
            &(),
        ));
        let store = writer.as_reader();
        let events = reflector::reflector(writer, stream::iter(events.into_iter().map(Ok)));
        settle(events, store.clone(), listed.clone(), None)
            .map(|obj| (obj.unwrap().metadata.name.unwrap(), store.state().len()))
            .collect()
            .await
    }

    #[tokio::test]
    async fn a_list_is_held_until_the_cache_holds_it_all() {
        use watcher::Event::*;
        let listed = Listed::new();
        let events = vec![
            Init,
            InitApply((*object("a")).clone()),
            InitApply((*object("b")).clone()),
            InitDone,
            Apply((*object("c")).clone()),
        ];
        // The cache's order is a hash map's: sort.
        let mut out = settled(events, &listed).await;
        out.sort();
        assert_eq!(
            out,
            [("a".into(), 2), ("b".into(), 2), ("c".into(), 3)],
            "a trigger of the list came before the cache held the list"
        );
        listed.wait().await;
    }

    #[tokio::test]
    async fn a_relist_triggers_what_was_deleted_while_the_watch_was_down() {
        use watcher::Event::*;
        let listed = Listed::new();
        let events = vec![
            Init,
            InitApply((*object("a")).clone()),
            InitApply((*object("gone")).clone()),
            InitDone,
            Init,
            InitApply((*object("a")).clone()),
            InitDone,
        ];
        let names: Vec<_> = settled(events, &listed)
            .await
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        assert_eq!(names.len(), 4, "{names:?}");
        // Each list emits its objects in the cache's (hash map) order: compare them as sets.
        let [first, second] = [&names[..2], &names[2..]].map(|list| {
            let mut list = list.to_vec();
            list.sort();
            list
        });
        assert_eq!(first, ["a", "gone"]);
        assert_eq!(
            second,
            ["a", "gone"],
            "the re-list did not trigger the deleted object"
        );
    }

    #[tokio::test]
    async fn listed_wakes_every_waiter() {
        let listed = Listed::new();
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let listed = listed.clone();
                tokio::spawn(async move { listed.wait().await })
            })
            .collect();
        listed.set();
        for waiter in waiters {
            waiter.await.unwrap();
        }
        listed.wait().await;
    }
}
