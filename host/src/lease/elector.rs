//! Taking part in an election on a coordination.k8s.io Lease, as client-go's leader election does: the
//! holder renews every `RETRY_PERIOD`; a candidate takes the Lease once it has seen the same record
//! (holder and renew time) for the Lease's duration on its own monotonic clock, so no two clocks need
//! agree. Unlike client-go, losing the Lease does not end the process: the replica steps down (its
//! fence closes) and stands again. Why not kube-lease-manager, which the host used before: it judges
//! expiry by the holder's wall-clock renew time and tells only state changes, so no fence can be built
//! on it.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use tokio::task::JoinHandle;

use super::Fence;
use super::watched::{LEASE_DURATION, Watched, duration};
use crate::telemetry::Metrics;

/// How long after the start of its last successful renewal the holder may write: shorter than the
/// Lease by a margin for the clocks' rates and for a write already on its way.
pub const RENEW_DEADLINE: Duration = Duration::from_secs(7);
/// How often the holder renews and a candidate looks.
pub const RETRY_PERIOD: Duration = Duration::from_secs(2);

/// Where the Lease lives, who we are, and what holding it means.
#[derive(Clone, Debug)]
pub struct Election {
    pub namespace: String,
    pub lease: String,
    pub identity: String,
    /// Labels the Lease carries (a shard Lease's ring and member), written on every claim.
    pub labels: BTreeMap<String, String>,
    pub role: Role,
}

/// What holding a Lease means: it is counted in its own metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The one Lease of replicas that elect a leader: the holder reconciles (or, sharded, assigns).
    Leader,
    /// A ring member's own Lease (`crate::shard`): the holder reconciles the parents assigned to it.
    Member,
}

impl Election {
    /// The leader election on `namespace/lease`, stood in as `identity`.
    pub fn leader(namespace: String, lease: String, identity: String) -> Election {
        Election {
            namespace,
            lease,
            identity,
            labels: BTreeMap::new(),
            role: Role::Leader,
        }
    }
}

/// What to do with the Lease, seen now.
#[derive(Debug, PartialEq)]
enum Step {
    /// Another replica holds it and renewed it within its duration (as we have watched it).
    Wait,
    /// Ours, free, or expired: write ourselves in (a renewal, or a takeover).
    Claim,
}

/// Decides from the Lease's `spec`, as seen at `now`, and how it was watched before (updated).
fn decide(spec: &LeaseSpec, me: &str, watched: &mut Option<Watched>, now: Instant) -> Step {
    let watched = match watched {
        Some(watched) => {
            watched.look(spec, now);
            watched
        }
        None => watched.insert(Watched::new(spec, now)),
    };
    match watched.holder() {
        None => Step::Claim,
        Some(holder) if holder == me => Step::Claim,
        Some(_) if watched.unchanged_for(now) < duration(spec) => Step::Wait,
        Some(_) => Step::Claim,
    }
}

/// `spec` with `me` written in as holder, renewed at `now` (also how a ring's leader takes the Lease
/// of a member that lapsed, `shard::assigner`).
pub fn claimed(spec: &LeaseSpec, me: &str, now: MicroTime) -> LeaseSpec {
    let held = spec.holder_identity.as_deref().filter(|h| !h.is_empty());
    let taken = held != Some(me);
    LeaseSpec {
        holder_identity: Some(me.to_string()),
        lease_duration_seconds: Some(LEASE_DURATION.as_secs() as i32),
        renew_time: Some(now.clone()),
        acquire_time: if taken {
            Some(now)
        } else {
            spec.acquire_time.clone()
        },
        lease_transitions: match (taken, held) {
            (true, Some(_)) => Some(spec.lease_transitions.unwrap_or(0) + 1),
            _ => spec.lease_transitions.or(Some(0)),
        },
        ..spec.clone()
    }
}

/// A replica's part in one election: it runs until `release`.
pub struct Elector {
    task: JoinHandle<()>,
    api: Api<Lease>,
    election: Election,
    fence: Fence,
}

impl Elector {
    /// Stands in `election` with `client` (unfenced: a Lease attempt is what a standby does write),
    /// opening and closing `fence` as the Lease is held and lost.
    pub fn start(election: Election, client: Client, fence: Fence, metrics: Metrics) -> Elector {
        let api = Api::namespaced(client, &election.namespace);
        tracing::info!(lease = %format!("{}/{}", election.namespace, election.lease), identity = %election.identity, "waiting for leadership");
        let task = tokio::spawn(elect(api.clone(), election.clone(), fence.clone(), metrics));
        Elector {
            task,
            api,
            election,
            fence,
        }
    }

    /// Stops standing and, if this replica holds the Lease, frees it: a candidate takes it at its
    /// next look instead of after the Lease's duration.
    pub async fn release(self) {
        self.task.abort();
        let held = self.fence.admits_writes();
        self.fence.close();
        if !held {
            return;
        }
        let Ok(mut lease) = self.api.get(&self.election.lease).await else {
            return;
        };
        let mut spec = lease.spec.take().unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(self.election.identity.as_str()) {
            return;
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(MicroTime(jiff::Timestamp::now()));
        lease.spec = Some(spec);
        match (self.api)
            .replace(&self.election.lease, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => tracing::info!(identity = %self.election.identity, "released the Lease"),
            Err(e) => tracing::warn!(error = %e, "releasing the Lease"),
        }
    }
}

/// The election loop: one attempt each retry period, for good.
async fn elect(api: Api<Lease>, election: Election, fence: Fence, metrics: Metrics) {
    let mut observed = None;
    loop {
        let started = Instant::now();
        let attempt = tokio::time::timeout(
            RENEW_DEADLINE,
            attempt(&api, &election, &mut observed, started),
        )
        .await;
        match attempt {
            Ok(Ok(true)) => {
                let newly = !*fence.leading().borrow();
                fence.renewed_until(started + RENEW_DEADLINE);
                if newly {
                    tracing::info!(identity = %election.identity, lease = %election.lease, "acquired the Lease");
                    transition(&metrics, election.role, true);
                }
            }
            Ok(Ok(false)) => {
                if *fence.leading().borrow() {
                    step_down(
                        &fence,
                        &election,
                        &metrics,
                        "another replica holds the Lease",
                    );
                }
            }
            Ok(Err(e)) => tracing::warn!(error = %e, "reading or writing the Lease"),
            Err(_) => tracing::warn!("the Lease's API call took longer than the renew deadline"),
        }
        if fence.lapsed() {
            step_down(
                &fence,
                &election,
                &metrics,
                "the Lease could not be renewed within the renew deadline",
            );
        }
        tokio::time::sleep(RETRY_PERIOD).await;
    }
}

fn step_down(fence: &Fence, election: &Election, metrics: &Metrics, why: &str) {
    fence.close();
    transition(metrics, election.role, false);
    tracing::warn!(
        why,
        lease = %election.lease,
        "stepped down: writing nothing until the Lease is held again"
    );
}

/// Counts a Lease taken (`true`) or stepped down from in the metrics of its role.
fn transition(metrics: &Metrics, role: Role, acquired: bool) {
    match role {
        Role::Leader => metrics.lease_transition(acquired),
        Role::Member => metrics.shard_lease_transition(acquired),
    }
}

/// One look at the Lease: `true` if this replica holds it afterwards.
async fn attempt(
    api: &Api<Lease>,
    election: &Election,
    observed: &mut Option<Watched>,
    now: Instant,
) -> kube::Result<bool> {
    let me = election.identity.as_str();
    let stamp = MicroTime(jiff::Timestamp::now());
    let Some(mut lease) = api.get_opt(&election.lease).await? else {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(election.lease.clone()),
                labels: (!election.labels.is_empty()).then(|| election.labels.clone()),
                ..Default::default()
            },
            spec: Some(claimed(&LeaseSpec::default(), me, stamp)),
        };
        return written(api.create(&PostParams::default(), &lease).await);
    };
    let spec = lease.spec.take().unwrap_or_default();
    if decide(&spec, me, observed, now) == Step::Wait {
        return Ok(false);
    }
    lease.spec = Some(claimed(&spec, me, stamp));
    let labels = lease.metadata.labels.get_or_insert_default();
    labels.extend(election.labels.clone());
    // The resourceVersion read above makes the write conditional: of two candidates, one wins.
    written(
        api.replace(&election.lease, &PostParams::default(), &lease)
            .await,
    )
}

/// A claim's write: a conflict (another candidate wrote first) means not held.
fn written(result: kube::Result<Lease>) -> kube::Result<bool> {
    match result {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(holder: Option<&str>, renewed: i64) -> LeaseSpec {
        LeaseSpec {
            holder_identity: holder.map(str::to_string),
            renew_time: Some(MicroTime(jiff::Timestamp::from_second(renewed).unwrap())),
            lease_duration_seconds: Some(10),
            ..Default::default()
        }
    }

    #[test]
    fn a_candidate_claims_only_a_lease_it_watched_unrenewed_for_its_duration() {
        let start = Instant::now();
        let at = |s| start + Duration::from_secs(s);
        let mut seen = None;
        // (the Lease as seen, seconds since the first look, the step)
        let table = [
            (spec(Some("other"), 100), 0, Step::Wait),
            (spec(Some("other"), 100), 9, Step::Wait),
            // Renewed: the watch starts again from this look.
            (spec(Some("other"), 108), 9, Step::Wait),
            (spec(Some("other"), 108), 18, Step::Wait),
            (spec(Some("other"), 108), 19, Step::Claim),
            // Ours, or free (released): claimed at once.
            (spec(Some("me"), 120), 19, Step::Claim),
            (spec(None, 121), 19, Step::Claim),
            (spec(Some(""), 122), 19, Step::Claim),
        ];
        for (i, (lease, seconds, step)) in table.into_iter().enumerate() {
            assert_eq!(
                decide(&lease, "me", &mut seen, at(seconds)),
                step,
                "row {i}"
            );
        }
    }

    #[test]
    fn a_lease_first_seen_stale_is_watched_for_a_duration_before_it_is_claimed() {
        // Its renew time may be an hour old by the API server's clock: a candidate does not trust
        // another clock, it watches.
        let now = Instant::now();
        let mut seen = None;
        let stale = spec(Some("other"), 0);
        assert_eq!(decide(&stale, "me", &mut seen, now), Step::Wait);
        let later = now + LEASE_DURATION;
        assert_eq!(decide(&stale, "me", &mut seen, later), Step::Claim);
    }

    #[test]
    fn a_claim_counts_a_takeover_and_keeps_the_acquire_time_of_a_renewal() {
        let now = MicroTime(jiff::Timestamp::from_second(200).unwrap());
        let mut taken_from = spec(Some("other"), 100);
        taken_from.lease_transitions = Some(3);
        let taken = claimed(&taken_from, "me", now.clone());
        assert_eq!(taken.holder_identity.as_deref(), Some("me"));
        assert_eq!(taken.lease_transitions, Some(4));
        assert_eq!(taken.acquire_time, Some(now.clone()));
        assert_eq!(taken.renew_time, Some(now.clone()));

        let later = MicroTime(jiff::Timestamp::from_second(202).unwrap());
        let renewed = claimed(&taken, "me", later.clone());
        assert_eq!(renewed.lease_transitions, Some(4));
        assert_eq!(renewed.acquire_time, Some(now));
        assert_eq!(renewed.renew_time, Some(later));

        let first = claimed(
            &LeaseSpec::default(),
            "me",
            MicroTime(jiff::Timestamp::now()),
        );
        assert_eq!(first.lease_transitions, Some(0));
    }
}
