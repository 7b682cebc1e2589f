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

use crate::identity::MANAGER;
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
    recent: Arc<Mutex<Recent>>,
}

/// The series seen in the last six minutes, and when the older ones were last dropped: dropping them
/// scans every series, so it is done once a minute, not on every Event (one per created child).
#[derive(Default)]
struct Recent {
    series: HashMap<SeriesKey, Series>,
    pruned: Option<Timestamp>,
}

/// What counting one more event needs: the Event's name, its count and when it was last seen.
#[derive(Clone)]
struct Series {
    name: String,
    count: i32,
    last_seen: Timestamp,
}

const PRUNE_EVERY: SignedDuration = SignedDuration::from_mins(1);

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
    /// The host's Events, posted through `client`: reported by the field manager's name and, in a Pod,
    /// the Pod's name (the downward API's POD_NAME), whichever reconciler they are about.
    pub fn for_host(client: Client) -> Recorder {
        let reporter = Reporter {
            controller: MANAGER.into(),
            instance: std::env::var("POD_NAME").ok(),
        };
        Recorder::new(client, reporter)
    }

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
        let seen = self
            .recent
            .lock()
            .expect("event series lock")
            .seen(&key, now);
        let namespace = regarding.namespace.as_deref().unwrap_or("default");
        let events: Api<K8sEvent> = Api::namespaced(self.client.clone(), namespace);
        let series = match seen {
            Some(Series { name, count, .. }) => {
                let count = count + 1;
                let series = EventSeries {
                    count,
                    last_observed_time: MicroTime(now),
                };
                let counted = serde_json::json!({ "series": series });
                events
                    .patch(&name, &PatchParams::default(), &Patch::Merge(counted))
                    .await?;
                Series {
                    name,
                    count,
                    last_seen: now,
                }
            }
            None => {
                let new = self.new_event(event, note, regarding, now);
                Series {
                    name: events
                        .create(&PostParams::default(), &new)
                        .await?
                        .name_any(),
                    count: 1,
                    last_seen: now,
                }
            }
        };
        self.recent
            .lock()
            .expect("event series lock")
            .series
            .insert(key, series);
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

impl Recent {
    /// The open series of `key` at `now`, if any; drops the closed ones once a minute.
    fn seen(&mut self, key: &SeriesKey, now: Timestamp) -> Option<Series> {
        if self.pruned.is_none_or(|t| t + PRUNE_EVERY < now) {
            self.series.retain(|_, s| s.last_seen + SERIES_TTL > now);
            self.pruned = Some(now);
        }
        self.series
            .get(key)
            .filter(|s| s.last_seen + SERIES_TTL > now)
            .cloned()
    }
}
