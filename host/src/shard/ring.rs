//! The ring as one replica observes it: the shard Leases carrying the ring's label (a reflector's
//! store, `membership`), each judged on this observer's own monotonic clock as `lease::elector`
//! judges the Lease it stands for. A member is live while it holds its own Lease and this observer
//! has seen the record renewed within the Lease's duration; no renew time is compared with this
//! replica's wall clock.
//!
//! A member that is not live is in one of three states, which tell the ring's leader what it may do
//! with its parents (`decide`): `Lapsed` (its Lease released, watched unrenewed for its duration, or
//! missing for as long): its fence has closed, but it may claim its Lease again, so the leader first
//! takes the Lease, a conditional write that fails if the member renewed meanwhile (a missing one it
//! makes anew, held by itself: a create that fails if the member made it first); `Fenced` (its
//! Lease held by another, the leader that took it): it cannot write again before it has watched that
//! record unrenewed for the Lease's duration, so its parents move at once; `Unseen` (no Lease seen
//! yet, for less than a duration): nothing moves yet.
//!
//! A member's Lease left unrenewed for `ORPHANED_AFTER` is orphaned: once no parent names the member,
//! the ring's leader deletes it, so that the Leases of replicas gone (each rollout's) do not pile up.
//! kubernetes-controller-sharding does the same with a shard dead for a minute.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;

use crate::lease::{Watched, duration};
use crate::names::MEMBER_LABEL;

/// How long a member's Lease stays unrenewed (and the member not live) before it is orphaned.
pub const ORPHANED_AFTER: Duration = Duration::from_secs(60);

/// What a member is to the ring, as this observer judges it now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Holds its own Lease, renewed within its duration: parents are assigned to it, and leave it
    /// only through a drain it acknowledges.
    Live,
    /// Released its Lease, or let it go unrenewed (or missing) for its duration: it writes nothing,
    /// but the leader must take its Lease before moving its parents.
    Lapsed,
    /// Its Lease is held by another (taken by the ring's leader): its parents move at once.
    Fenced,
    /// Not seen yet (no Lease, for less than a Lease's duration): its parents stay for now.
    Unseen,
}

/// One member's Lease as last observed.
#[derive(Clone, Debug)]
struct Observed {
    watched: Watched,
    lease: Lease,
}

/// The ring's members, observed over time (each observation updates the watch of every record).
#[derive(Debug, Default)]
pub struct Ring {
    members: BTreeMap<String, Observed>,
    /// Members asked about, or whose Lease went, with no Lease now: since when.
    missing: BTreeMap<String, Instant>,
}

impl Ring {
    /// Observes the ring's Leases as they are at `now`; a Lease without a member label is no
    /// member's and is passed over.
    pub fn observe<'l>(&mut self, leases: impl IntoIterator<Item = &'l Lease>, now: Instant) {
        let mut members = BTreeMap::new();
        for lease in leases {
            let Some(member) = member_of(lease) else {
                continue;
            };
            let spec = lease.spec.clone().unwrap_or_default();
            let watched = match self.members.remove(member) {
                Some(Observed { mut watched, .. }) => {
                    watched.look(&spec, now);
                    watched
                }
                None => Watched::new(&spec, now),
            };
            self.missing.remove(member);
            let lease = lease.clone();
            members.insert(member.to_string(), Observed { watched, lease });
        }
        // Whatever is left had a Lease that went: missing from now.
        for gone in std::mem::replace(&mut self.members, members).into_keys() {
            self.missing.entry(gone).or_insert(now);
        }
    }

    /// The live members, in name order: the ones parents are assigned to.
    pub fn live(&self, now: Instant) -> Vec<&str> {
        (self.members.iter())
            .filter(|(member, observed)| judge(member, observed, now) == State::Live)
            .map(|(member, _)| member.as_str())
            .collect()
    }

    /// What `member` is now. A member with no Lease is watched missing from the first time it is
    /// asked about (or its Lease went), and lapses after a default Lease duration.
    pub fn state(&mut self, member: &str, now: Instant) -> State {
        if let Some(observed) = self.members.get(member) {
            return judge(member, observed, now);
        }
        let since = *self.missing.entry(member.to_string()).or_insert(now);
        match now.saturating_duration_since(since) < crate::lease::LEASE_DURATION {
            true => State::Unseen,
            false => State::Lapsed,
        }
    }

    /// The Leases of the members not live whose record was watched unchanged for `ORPHANED_AFTER`.
    pub fn orphaned(&self, now: Instant) -> impl Iterator<Item = &Lease> {
        (self.members.iter())
            .filter(move |(member, observed)| {
                judge(member, observed, now) != State::Live
                    && observed.watched.unchanged_for(now) >= ORPHANED_AFTER
            })
            .map(|(_, observed)| &observed.lease)
    }

    /// `member`'s Lease as last observed (what the leader's conditional take starts from).
    pub fn lease(&self, member: &str) -> Option<&Lease> {
        self.members.get(member).map(|observed| &observed.lease)
    }
}

/// The member a shard Lease belongs to.
pub fn member_of(lease: &Lease) -> Option<&str> {
    lease
        .metadata
        .labels
        .as_ref()?
        .get(MEMBER_LABEL)
        .map(String::as_str)
}

fn judge(member: &str, observed: &Observed, now: Instant) -> State {
    let spec = observed.lease.spec.clone().unwrap_or_default();
    let unrenewed = observed.watched.unchanged_for(now) >= duration(&spec);
    match observed.watched.holder() {
        None => State::Lapsed,
        Some(holder) if holder != member => State::Fenced,
        Some(_) if unrenewed => State::Lapsed,
        Some(_) => State::Live,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::fixtures::lease;
    use super::*;

    #[test]
    fn a_member_is_live_until_watched_unrenewed_for_its_duration_on_the_observers_clock() {
        let start = Instant::now();
        let at = |s| start + Duration::from_secs(s);
        let mut ring = Ring::default();
        // (the Leases as observed, seconds since the first look, the live members)
        let table: [(Vec<Lease>, u64, Vec<&str>); 6] = [
            // Renew times an hour old by this clock: no matter, they are watched from now.
            (
                vec![lease("a", "a", 0), lease("b", "b", 0)],
                0,
                vec!["a", "b"],
            ),
            (
                vec![lease("a", "a", 2), lease("b", "b", 0)],
                9,
                vec!["a", "b"],
            ),
            // b unrenewed for 10 s as watched: out; a renewed at 9 s: in.
            (vec![lease("a", "a", 2), lease("b", "b", 0)], 10, vec!["a"]),
            // b renews again: back in at once.
            (
                vec![lease("a", "a", 2), lease("b", "b", 30)],
                11,
                vec!["a", "b"],
            ),
            // a released its Lease (no holder), c joined.
            (
                vec![lease("a", "", 40), lease("b", "b", 40), lease("c", "c", 40)],
                12,
                vec!["b", "c"],
            ),
            // b's Lease taken by the leader: not live, however fresh.
            (
                vec![lease("b", "leader", 50), lease("c", "c", 50)],
                13,
                vec!["c"],
            ),
        ];
        for (i, (leases, seconds, live)) in table.into_iter().enumerate() {
            ring.observe(&leases, at(seconds));
            assert_eq!(ring.live(at(seconds)), live, "row {i}");
        }
    }

    #[test]
    fn each_state_says_what_the_leader_may_do_with_a_members_parents() {
        let start = Instant::now();
        let at = |s| start + Duration::from_secs(s);
        let mut ring = Ring::default();
        let leases = [
            lease("live", "live", 0),
            lease("stale", "stale", 0),
            lease("released", "", 0),
            lease("taken", "leader", 0),
        ];
        ring.observe(&leases, at(0));
        let renewed = [
            lease("live", "live", 9),
            lease("stale", "stale", 0),
            lease("released", "", 0),
            lease("taken", "leader", 0),
        ];
        ring.observe(&renewed, at(10));
        let now = at(10);
        assert_eq!(ring.state("live", now), State::Live);
        assert_eq!(ring.state("stale", now), State::Lapsed);
        assert_eq!(ring.state("released", now), State::Lapsed);
        assert_eq!(ring.state("taken", now), State::Fenced);
        // Never seen: joining for a Lease's duration from the first question, then lapsed.
        assert_eq!(ring.state("unseen", now), State::Unseen);
        assert_eq!(ring.state("unseen", at(19)), State::Unseen);
        assert_eq!(ring.state("unseen", at(20)), State::Lapsed);
        assert_eq!(ring.lease("stale").and_then(member_of), Some("stale"));
    }

    #[test]
    fn a_lease_unrenewed_for_a_minute_and_not_live_is_orphaned() {
        let start = Instant::now();
        let at = |s| start + Duration::from_secs(s);
        let mut ring = Ring::default();
        let leases = |t| {
            [
                lease("live", "live", t),
                lease("gone", "gone", 0),
                lease("released", "", 0),
                lease("taken", "leader", 0),
            ]
        };
        fn orphaned(ring: &Ring, now: Instant) -> Vec<&str> {
            ring.orphaned(now).filter_map(member_of).collect()
        }
        ring.observe(&leases(0), at(0));
        ring.observe(&leases(59), at(59));
        assert!(
            orphaned(&ring, at(59)).is_empty(),
            "{:?}",
            orphaned(&ring, at(59))
        );
        ring.observe(&leases(60), at(60));
        assert_eq!(orphaned(&ring, at(60)), ["gone", "released", "taken"]);
        // A taken Lease the leader still renews is no orphan.
        let renewed = [lease("taken", "leader", 61)];
        ring.observe(&renewed, at(61));
        assert!(orphaned(&ring, at(61)).is_empty());
    }

    #[test]
    fn a_member_whose_lease_went_is_missing_from_then_and_a_lease_without_member_is_none() {
        let start = Instant::now();
        let at = |s| start + Duration::from_secs(s);
        let mut ring = Ring::default();
        let mut stray = lease("x", "x", 0);
        stray.metadata.labels = None;
        ring.observe(&[lease("a", "a", 0), stray], at(0));
        assert_eq!(ring.live(at(0)), ["a"]);
        ring.observe(&[], at(5));
        assert_eq!(ring.state("a", at(14)), State::Unseen);
        assert_eq!(ring.state("a", at(15)), State::Lapsed);
        // Back: live again, the missing watch forgotten.
        ring.observe(&[lease("a", "a", 20)], at(16));
        assert_eq!(ring.state("a", at(16)), State::Live);
    }
}
