//! The status of a `Reconciler` or `ClusterReconciler`: what its owner reads with `kubectl get` and
//! `describe`. Written by the host under its own identity (the reconciler's ServiceAccount need not
//! see its own object), only when it changes, with a Warning Event each time a new failure appears.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Patch, PatchParams};
use kube::core::DynamicObject;
use kube::runtime::events::{Event, EventType};
use kube::{Api, Client, Resource};
use serde_json::json;

use super::spec::Key;
use crate::lease::Fence;
use crate::telemetry::Recorder;
use crate::text::truncate;

/// Why a reconciler is or is not ready, and the figures of its parents.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// `Ready`'s status: true only while its controller runs on synced caches.
    pub ready: bool,
    /// A CamelCase word: `Running`, `Starting`, `Paused`, `InvalidSpec`, `ModuleUnavailable`,
    /// `ModuleRefused`, `KindNotServed`, `WatchFailed`.
    pub reason: &'static str,
    pub message: String,
    /// Set while it runs but something is wrong: `ModuleRefused` or `ModuleUnavailable` (an older
    /// module keeps serving) or `ParentsFailing`.
    pub degraded: Option<(&'static str, String)>,
    pub module_digest: Option<String>,
    pub parents: usize,
    pub failing_parents: usize,
}

impl Report {
    pub fn not_ready(reason: &'static str, message: impl Into<String>) -> Report {
        Report {
            reason,
            message: message.into(),
            ..Report::default()
        }
    }
}

/// Writes one reconciler's status; remembers what it wrote to keep transition times and skip no-ops.
/// Only while this replica leads: a standby follows the same reconcilers and must not contradict the
/// leader's word on them (its client would refuse the write anyway: this spares the attempt).
pub struct StatusWriter {
    api: Api<DynamicObject>,
    recorder: Recorder,
    key: Key,
    fence: Fence,
    last: Option<(Report, i64, Time)>,
}

impl StatusWriter {
    pub fn new(client: Client, recorder: Recorder, fence: Fence, key: Key) -> StatusWriter {
        let resource = key.scope().resource();
        let api = match &key.namespace {
            Some(namespace) => Api::namespaced_with(client, namespace, &resource),
            None => Api::all_with(client, &resource),
        };
        StatusWriter {
            api,
            recorder,
            key,
            fence,
            last: None,
        }
    }

    /// Writes `report` for the object at `generation` unless that is what the status already says.
    pub async fn write(&mut self, object: &DynamicObject, report: Report) {
        if !self.fence.admits_writes() {
            return;
        }
        let generation = object.metadata.generation.unwrap_or_default();
        let since = match &self.last {
            Some((last, last_generation, _))
                if last == &report && *last_generation == generation =>
            {
                return;
            }
            Some((last, _, since))
                if last.ready == report.ready && last.reason == report.reason =>
            {
                since.clone()
            }
            _ => Time(k8s_openapi::jiff::Timestamp::now()),
        };
        let was_failing = self
            .last
            .as_ref()
            .map(|(last, ..)| (last.reason, last.degraded.as_ref().map(|d| d.0)));
        let mut conditions = vec![json!({
            "type": "Ready",
            "status": if report.ready { "True" } else { "False" },
            "reason": report.reason,
            "message": truncate(report.message.clone(), 1000),
            "observedGeneration": generation,
            "lastTransitionTime": since,
        })];
        if let Some((reason, message)) = &report.degraded {
            conditions.push(json!({
                "type": "Degraded",
                "status": "True",
                "reason": reason,
                "message": truncate(message.clone(), 1000),
                "observedGeneration": generation,
                "lastTransitionTime": since,
            }));
        }
        let status = json!({
            "status": {
                "observedGeneration": generation,
                "conditions": conditions,
                "moduleDigest": report.module_digest,
                "parents": report.parents,
                "failingParents": report.failing_parents,
            }
        });
        let name = self.key.name.clone();
        match self
            .api
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
            .await
        {
            Ok(_) => {
                let failure = (!report.ready)
                    .then_some((report.reason, report.message.clone()))
                    .filter(|(reason, _)| !matches!(*reason, "Starting" | "Paused"))
                    .or(report.degraded.clone());
                let now = (report.reason, report.degraded.as_ref().map(|d| d.0));
                if let Some((reason, message)) = failure.filter(|_| was_failing != Some(now)) {
                    self.publish(object, reason, message).await;
                }
                self.last = Some((report, generation, since));
            }
            Err(e) => {
                tracing::warn!(reconciler = %self.key, error = %e, "cannot write the reconciler's status")
            }
        }
    }

    async fn publish(&self, object: &DynamicObject, reason: &str, message: String) {
        let event = Event {
            type_: EventType::Warning,
            reason: reason.into(),
            note: Some(message),
            action: "Run".into(),
            secondary: None,
        };
        let reference = object.object_ref(&self.key.scope().resource());
        if let Err(e) = self.recorder.publish(&event, &reference).await {
            tracing::warn!(reconciler = %self.key, error = %e, "cannot publish event");
        }
    }
}
