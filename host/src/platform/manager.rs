//! Keeps the running reconcilers in step with the `Reconciler` and `ClusterReconciler` objects: starts
//! one for each valid, unpaused object, restarts it when its spec changes (a new module version is a
//! hot swap inside it, not a restart), and stops it when the object is paused, made invalid or deleted.
//! Children of a stopped reconciler are left alone: deleting a reconciler is not deleting its parents.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kube::core::DynamicObject;
use kube::runtime::watcher;

use super::instance::{Instance, Shared};
use super::spec::{Definition, Key, Scope};
use super::status::{Report, StatusWriter};

pub struct Manager {
    shared: Arc<Shared>,
    running: BTreeMap<Key, Instance>,
    /// Objects that run nothing (paused or invalid), with the writer of their status.
    idle: BTreeMap<Key, StatusWriter>,
    /// Per kind, the keys seen during its initial list or re-list: the others are gone.
    listing: BTreeMap<Scope, BTreeSet<Key>>,
}

impl Manager {
    pub fn new(shared: Arc<Shared>) -> Manager {
        Manager {
            shared,
            running: BTreeMap::new(),
            idle: BTreeMap::new(),
            listing: BTreeMap::new(),
        }
    }

    /// Applies one watch event of the kind `scope`; a (re-)list of one kind stops only reconcilers of
    /// that kind that it no longer holds.
    pub async fn handle(&mut self, event: watcher::Event<DynamicObject>, scope: Scope) {
        match event {
            watcher::Event::Init => {
                self.listing.insert(scope, BTreeSet::new());
            }
            watcher::Event::InitApply(object) => {
                if let Some(listing) = self.listing.get_mut(&scope) {
                    listing.insert(Key::of(&object));
                }
                self.apply(object).await;
            }
            watcher::Event::InitDone => {
                let listed = self.listing.remove(&scope).unwrap_or_default();
                let gone: Vec<Key> = self
                    .running
                    .keys()
                    .chain(self.idle.keys())
                    .filter(|key| key.scope() == scope && !listed.contains(key))
                    .cloned()
                    .collect();
                for key in gone {
                    self.delete(&key).await;
                }
            }
            watcher::Event::Apply(object) => self.apply(object).await,
            watcher::Event::Delete(object) => self.delete(&Key::of(&object)).await,
        }
    }

    async fn apply(&mut self, object: DynamicObject) {
        let key = Key::of(&object);
        let definition = match Definition::read(&object) {
            Ok(definition) if !definition.spec.paused => definition,
            Ok(_) => {
                return self
                    .idle(
                        key,
                        &object,
                        Report::not_ready("Paused", "spec.paused is true"),
                    )
                    .await;
            }
            Err(e) => {
                tracing::warn!(reconciler = %key, error = %e, "invalid reconciler");
                return self
                    .idle(
                        key,
                        &object,
                        Report::not_ready("InvalidSpec", e.to_string()),
                    )
                    .await;
            }
        };
        if let Some(instance) = self.running.get(&key) {
            if instance.definition == definition {
                instance.observe(object);
                return;
            }
            tracing::info!(reconciler = %key, "spec changed; restarting the reconciler");
            self.running.remove(&key).expect("present").stop().await;
        }
        self.idle.remove(&key);
        let instance = Instance::start(self.shared.clone(), definition, object);
        self.running.insert(key, instance);
    }

    async fn idle(&mut self, key: Key, object: &DynamicObject, report: Report) {
        if let Some(instance) = self.running.remove(&key) {
            instance.stop().await;
        }
        let shared = &self.shared;
        let writer = self.idle.entry(key.clone()).or_insert_with(|| {
            let fence = shared.fence.clone();
            StatusWriter::new(shared.client.clone(), shared.recorder.clone(), fence, key)
        });
        writer.write(object, report).await;
    }

    async fn delete(&mut self, key: &Key) {
        self.idle.remove(key);
        if let Some(instance) = self.running.remove(key) {
            tracing::info!(reconciler = %key, "reconciler deleted; stopping it (its children stay)");
            instance.stop().await;
        }
    }

    /// Stops every reconciler (the host is shutting down).
    pub async fn stop_all(&mut self) {
        let running = std::mem::take(&mut self.running);
        futures::future::join_all(running.into_values().map(Instance::stop)).await;
    }
}
