//! A Lease's record (holder and renew time) as one observer watches it, on the observer's own
//! monotonic clock: how long it has stayed the same. A candidate (`elector`) and a ring's observer
//! (`crate::shard::ring`) both judge a holder gone by this, never by the renew time's wall clock, so
//! no two clocks need agree: a record watched unchanged for the Lease's duration was not renewed for
//! at least that long, whatever the clock of the replica that wrote it said.

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;

/// How long a Lease lasts without renewal: a candidate takes over at most this long (plus one retry
/// period) after the holder stopped renewing, and a ring's observer judges a member gone after it.
pub const LEASE_DURATION: Duration = Duration::from_secs(10);

/// A Lease's record as last seen, and since when it has been seen so.
#[derive(Clone, Debug, PartialEq)]
pub struct Watched {
    holder: Option<String>,
    renew_time: Option<MicroTime>,
    since: Instant,
}

impl Watched {
    /// The record of `spec`, first seen at `now`.
    pub fn new(spec: &LeaseSpec, now: Instant) -> Watched {
        Watched {
            holder: holder(spec),
            renew_time: spec.renew_time.clone(),
            since: now,
        }
    }

    /// Looks at `spec` again at `now`: a changed record (a renewal, a new holder) starts the watch
    /// again.
    pub fn look(&mut self, spec: &LeaseSpec, now: Instant) {
        if (holder(spec), &spec.renew_time) != (self.holder.clone(), &self.renew_time) {
            *self = Watched::new(spec, now);
        }
    }

    /// The holder as last seen; `None` for a free (released) Lease.
    pub fn holder(&self) -> Option<&str> {
        self.holder.as_deref()
    }

    /// How long the record has stayed as it is, as of `now`.
    pub fn unchanged_for(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.since)
    }
}

/// The holder `spec` names; an empty name is none (a released Lease).
fn holder(spec: &LeaseSpec) -> Option<String> {
    spec.holder_identity.clone().filter(|h| !h.is_empty())
}

/// How long `spec`'s Lease lasts without renewal: its own duration, else the host's default.
pub fn duration(spec: &LeaseSpec) -> Duration {
    spec.lease_duration_seconds
        .and_then(|s| u64::try_from(s).ok())
        .map_or(LEASE_DURATION, Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(holder: &str, renewed: i64) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.into()),
            renew_time: Some(MicroTime(jiff::Timestamp::from_second(renewed).unwrap())),
            ..Default::default()
        }
    }

    #[test]
    fn a_record_is_watched_from_the_look_that_first_saw_it() {
        let start = Instant::now();
        let at = |s| start + Duration::from_secs(s);
        let mut watched = Watched::new(&spec("a", 100), at(0));
        watched.look(&spec("a", 100), at(5));
        assert_eq!(watched.unchanged_for(at(6)), Duration::from_secs(6));
        // A renewal and a new holder each start the watch again.
        watched.look(&spec("a", 102), at(7));
        assert_eq!(watched.unchanged_for(at(8)), Duration::from_secs(1));
        watched.look(&spec("b", 102), at(9));
        assert_eq!(watched.unchanged_for(at(9)), Duration::ZERO);
        assert_eq!(watched.holder(), Some("b"));
        // Released: no holder.
        watched.look(&spec("", 103), at(10));
        assert_eq!(watched.holder(), None);
    }

    #[test]
    fn a_lease_lasts_its_own_duration_or_the_default() {
        let mut lease = spec("a", 1);
        assert_eq!(duration(&lease), LEASE_DURATION);
        lease.lease_duration_seconds = Some(20);
        assert_eq!(duration(&lease), Duration::from_secs(20));
        lease.lease_duration_seconds = Some(-1);
        assert_eq!(duration(&lease), LEASE_DURATION);
    }
}
