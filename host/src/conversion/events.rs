//! A failed conversion, told where its owner looks: a Warning Event on the CRD, whose reason is the
//! review's (`ConverterFailed`, `ConversionInvalid`, `ConversionMetadataChanged`, `ConversionFailed`)
//! and whose note is the message the API server got. Without it a failed conversion is seen only by
//! the client whose read failed, and in the host's log.
//!
//! Bounded: the Recorder counts the same note again in one Event's series, but every object that fails
//! has its own note, so a module that fails every object of a large kind would post one Event per
//! object. At most `BURST` Events are posted at once and one per `REFILL` after that; the rest are
//! only logged and counted (`reconcile_host_conversions_total`). A busy answer or a request that is no
//! ConversionReview posts none: neither is the module's failure.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::runtime::events::{Event, EventType};

use super::Outcome;
use super::review::{CONVERSION_INVALID, CONVERTER_FAILED, METADATA_CHANGED};
use super::server::FAILED;
use crate::telemetry::Recorder;

/// Events posted at once before the pace applies.
const BURST: u32 = 10;
/// One more Event may be posted per this much time.
const REFILL: Duration = Duration::from_secs(6);

/// The results that are the module's failures, each told on the CRD.
const TOLD: [&str; 4] = [
    CONVERTER_FAILED,
    CONVERSION_INVALID,
    METADATA_CHANGED,
    FAILED,
];

/// Posts the Warning Events of failed conversions on one CRD.
#[derive(Clone)]
pub struct CrdEvents {
    recorder: Recorder,
    crd: ObjectReference,
    budget: Arc<Mutex<Budget>>,
}

impl CrdEvents {
    /// Events on CRD `name`, posted by `recorder` (the host's identity). The CRD's UID, which
    /// `kubectl describe crd` selects its Events by, is read once; without it they still list by name.
    pub async fn new(recorder: Recorder, client: kube::Client, name: &str) -> CrdEvents {
        let uid = match Api::<CustomResourceDefinition>::all(client).get(name).await {
            Ok(crd) => crd.metadata.uid,
            Err(e) => {
                tracing::warn!(crd = name, error = %e, "reading the CRD for its Events' UID");
                None
            }
        };
        CrdEvents {
            recorder,
            crd: ObjectReference {
                api_version: Some("apiextensions.k8s.io/v1".into()),
                kind: Some("CustomResourceDefinition".into()),
                name: Some(name.into()),
                uid,
                ..ObjectReference::default()
            },
            budget: Arc::new(Mutex::new(Budget::new(Instant::now()))),
        }
    }

    /// Posts a Warning Event for `outcome` if it is the module's failure and the budget allows, in the
    /// background (the API server waits for the review, not for the Event).
    pub fn tell(&self, outcome: &Outcome) {
        let Some(note) = outcome.message.filter(|_| TOLD.contains(&outcome.result)) else {
            return;
        };
        if !self
            .budget
            .lock()
            .expect("budget lock")
            .take(Instant::now())
        {
            tracing::debug!(
                reason = outcome.result,
                "conversion Event over the budget: not posted"
            );
            return;
        }
        let event = Event {
            type_: EventType::Warning,
            reason: outcome.result.into(),
            note: Some(note.into()),
            action: "Convert".into(),
            secondary: None,
        };
        let (recorder, crd) = (self.recorder.clone(), self.crd.clone());
        tokio::spawn(async move {
            if let Err(e) = recorder.publish(&event, &crd).await {
                tracing::warn!(error = %e, "cannot publish the conversion failure Event");
            }
        });
    }
}

/// A token bucket: `BURST` tokens, one more per `REFILL`.
struct Budget {
    tokens: u32,
    since: Instant,
}

impl Budget {
    fn new(now: Instant) -> Budget {
        Budget {
            tokens: BURST,
            since: now,
        }
    }

    /// Takes a token if there is one at `now`.
    fn take(&mut self, now: Instant) -> bool {
        let earned = now.saturating_duration_since(self.since).as_millis() / REFILL.as_millis();
        let total = u128::from(self.tokens) + earned;
        if total >= u128::from(BURST) {
            // Full: what is earned from now on counts from now.
            self.tokens = BURST;
            self.since = now;
        } else if earned > 0 {
            self.tokens = total as u32;
            self.since += REFILL * earned as u32;
        }
        if self.tokens == 0 {
            return false;
        }
        self.tokens -= 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_posted_then_one_per_refill() {
        let start = Instant::now();
        let mut budget = Budget::new(start);
        for _ in 0..BURST {
            assert!(budget.take(start));
        }
        assert!(!budget.take(start), "over the burst");
        assert!(!budget.take(start + REFILL / 2));
        assert!(budget.take(start + REFILL), "one earned");
        assert!(!budget.take(start + REFILL));
        // A long quiet time earns the burst back, not more.
        let later = start + REFILL * 100;
        for _ in 0..BURST {
            assert!(budget.take(later));
        }
        assert!(!budget.take(later));
    }
}
