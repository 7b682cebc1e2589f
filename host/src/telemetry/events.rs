//! Kubernetes Events (events.k8s.io/v1), repeated ones counted in a series rather than posted again.
//!
//! kube-runtime's `Recorder` does the same, but it keys a series without the note: a second event of the
//! same reason on the same object within six minutes only counts up the first one, and its own message
//! is lost. A module refused as "not a component", then another refused for running out of memory,
//! would both read "not a component". client-go's events library keys on the note too, and so does
//! this one: the same note again is a series, another note is another Event.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as K8sEvent, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType, Reporter};
use kube::{Client, ResourceExt};

use crate::text::truncate;

/// How long a series stays open after its last event, as in client-go and kube-runtime.
const SERIES_TTL: SignedDuration = SignedDuration::from_mins(6);

/// The API server refuses notes over 1 kB.
const MAX_NOTE_BYTES: usize = 1000;

/// Posts Events for one reporting controller; clones share the series.
#[derive(Clone)]
pub struct Recorder {
    client: Client,
    reporter: Reporter,
    recent: Arc<Mutex<HashMap<SeriesKey, K8sEvent>>>,
}

/// What makes two events the same event seen again (client-go's `eventKey`).
#[derive(Clone, PartialEq, Eq, Hash)]
struct SeriesKey {
    warning: bool,
    action: String,
    reason: String,
    note: Option<String>,
    regarding: ObjectKey,
    related: Option<ObjectKey>,
}

/// An object reference without its resourceVersion and fieldPath, which change while it is the same
/// object.
#[derive(Clone, PartialEq, Eq, Hash)]
struct ObjectKey([Option<String>; 5]);

impl From<&ObjectReference> for ObjectKey {
    fn from(r: &ObjectReference) -> Self {
        ObjectKey([
            r.api_version.clone(),
            r.kind.clone(),
            r.namespace.clone(),
            r.name.clone(),
            r.uid.clone(),
        ])
    }
}

impl Recorder {
    pub fn new(client: Client, reporter: Reporter) -> Recorder {
        Recorder {
            client,
            reporter,
            recent: Arc::default(),
        }
    }

    /// Posts `event` about `regarding` (its note cut to the API's 1 kB), or counts it in the series of
    /// the same event posted in the last six minutes. Cluster-scoped objects get their Events in
    /// `default`.
    pub async fn publish(
        &self,
        event: &Event,
        regarding: &ObjectReference,
    ) -> Result<(), kube::Error> {
        let now = Timestamp::now();
        let note = event.note.clone().map(|n| truncate(n, MAX_NOTE_BYTES));
        let key = SeriesKey {
            warning: event.type_ == EventType::Warning,
            action: event.action.clone(),
            reason: event.reason.clone(),
            note: note.clone(),
            regarding: regarding.into(),
            related: event.secondary.as_ref().map(Into::into),
        };
        let seen = {
            let mut recent = self.recent.lock().expect("event series lock");
            recent.retain(|_, e| last_seen(e).is_some_and(|t| t + SERIES_TTL > now));
            recent.get(&key).cloned()
        };
        let namespace = regarding.namespace.as_deref().unwrap_or("default");
        let events: Api<K8sEvent> = Api::namespaced(self.client.clone(), namespace);
        let posted = match seen {
            Some(mut series) => {
                let count = series.series.as_ref().map_or(2, |s| s.count + 1);
                series.series = Some(EventSeries {
                    count,
                    last_observed_time: MicroTime(now),
                });
                let counted = serde_json::json!({ "series": series.series });
                events
                    .patch(
                        &series.name_any(),
                        &PatchParams::default(),
                        &Patch::Merge(counted),
                    )
                    .await?
            }
            None => {
                let new = self.new_event(event, note, regarding, now);
                events.create(&PostParams::default(), &new).await?
            }
        };
        self.recent
            .lock()
            .expect("event series lock")
            .insert(key, posted);
        Ok(())
    }

    fn new_event(
        &self,
        event: &Event,
        note: Option<String>,
        regarding: &ObjectReference,
        now: Timestamp,
    ) -> K8sEvent {
        let controller = &self.reporter.controller;
        K8sEvent {
            action: Some(event.action.clone()),
            reason: Some(event.reason.clone()),
            note,
            type_: Some(format!("{:?}", event.type_)),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            related: event.secondary.clone(),
            reporting_controller: Some(controller.clone()),
            reporting_instance: Some(self.reporter.instance.clone().unwrap_or(controller.clone())),
            metadata: ObjectMeta {
                namespace: regarding.namespace.clone(),
                name: Some(format!(
                    "{}.{:x}",
                    regarding.name.as_deref().unwrap_or(controller),
                    now.as_nanosecond()
                )),
                ..ObjectMeta::default()
            },
            ..K8sEvent::default()
        }
    }
}

/// When an event was last seen: its series' last observation, or its own time.
fn last_seen(event: &K8sEvent) -> Option<Timestamp> {
    match &event.series {
        Some(series) => Some(series.last_observed_time.0),
        None => event.event_time.as_ref().map(|t| t.0),
    }
}
