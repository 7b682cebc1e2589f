//! The ring leader's decision for one parent: pure, from the parent's two labels, the member the
//! parent belongs to on the live ring (`assign`), and the state of the member that holds it now
//! (`ring`). Each action is one write, conditional on the parent's (or, for `Fence`, the Lease's)
//! resourceVersion, so a decision made on a stale cache fails instead of undoing a newer one.
//!
//! The rules keep a parent with one member at a time: a live member gives a parent up only by its
//! own acknowledgement (it removes both labels inside a reconcile of that parent, so after any
//! reconcile of it has finished), and only then is the parent assigned anew; a member that is not
//! live loses its parents only once its Lease is out of its reach (`Fenced`).

use super::ring::State;

/// A parent's ring labels, as the leader's cache shows them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Held<'p> {
    /// The member its shard label names; `None`: unassigned (new, or released after a drain).
    pub member: Option<&'p str>,
    /// Whether it carries the drain label (its member is asked to release it).
    pub draining: bool,
}

/// What the leader writes for one parent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action<'a> {
    /// Nothing: it is where it belongs, or a drain waits for its member's release, or its member is
    /// not seen yet, or no member is live to take it.
    Keep,
    /// Unassigned: label it with `to` (and drop a drain label left behind).
    Assign { to: &'a str },
    /// Held by a live member it no longer belongs to: ask that member to release it.
    Drain { from: &'a str },
    /// Held by a member whose Lease the leader holds: label it with `to` at once.
    Reassign { from: &'a str, to: &'a str },
    /// Held by a member that lapsed: take its Lease first (it fails if the member renewed), after
    /// which its parents are `Reassign`ed.
    Fence { member: &'a str },
}

/// The action for a parent `held` so, that belongs to `desired` on the live ring (`None`: no member
/// is live), where `state` tells what a member is now.
pub fn decide<'a>(
    held: Held<'a>,
    desired: Option<&'a str>,
    state: impl FnOnce(&str) -> State,
) -> Action<'a> {
    let Some(from) = held.member else {
        return desired.map_or(Action::Keep, |to| Action::Assign { to });
    };
    match (state(from), desired) {
        (State::Live, Some(to)) if to != from && !held.draining => Action::Drain { from },
        (State::Live | State::Unseen, _) => Action::Keep,
        (State::Lapsed, _) => Action::Fence { member: from },
        (State::Fenced, Some(to)) => Action::Reassign { from, to },
        (State::Fenced, None) => Action::Keep,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A parent held by `member`, draining or not.
    fn held(member: Option<&str>, draining: bool) -> Held<'_> {
        Held { member, draining }
    }

    #[test]
    fn a_parent_changes_member_only_through_a_release_or_a_fenced_lease() {
        use Action::*;
        use State::*;
        // (labels, desired member, state of the holding member, action)
        let table = [
            // New, or released after a drain (a drain label left behind is dropped by the write).
            (held(None, false), Some("b"), Live, Assign { to: "b" }),
            (held(None, true), Some("b"), Live, Assign { to: "b" }),
            (held(None, false), None, Live, Keep),
            // Where it belongs.
            (held(Some("a"), false), Some("a"), Live, Keep),
            // Belongs elsewhere now: the live holder is asked to release, once.
            (held(Some("a"), false), Some("b"), Live, Drain { from: "a" }),
            (held(Some("a"), true), Some("b"), Live, Keep),
            // The ring changed back while draining: the release still comes, then it is assigned.
            (held(Some("a"), true), Some("a"), Live, Keep),
            // The holder lapsed (released, unrenewed, missing): fenced first, whatever is desired.
            (
                held(Some("a"), false),
                Some("b"),
                Lapsed,
                Fence { member: "a" },
            ),
            (
                held(Some("a"), true),
                Some("b"),
                Lapsed,
                Fence { member: "a" },
            ),
            (held(Some("a"), false), None, Lapsed, Fence { member: "a" }),
            // Its Lease taken: the parent moves at once, drain or not.
            (
                held(Some("a"), false),
                Some("b"),
                Fenced,
                Reassign { from: "a", to: "b" },
            ),
            (
                held(Some("a"), true),
                Some("b"),
                Fenced,
                Reassign { from: "a", to: "b" },
            ),
            (held(Some("a"), false), None, Fenced, Keep),
            // A member not seen yet (a replica starting, a cache behind): nothing moves.
            (held(Some("new"), false), Some("b"), Unseen, Keep),
        ];
        for (i, (held, desired, state, action)) in table.into_iter().enumerate() {
            assert_eq!(decide(held, desired, |_| state), action, "row {i}");
        }
    }

    #[test]
    fn the_state_asked_is_the_holders() {
        let mut asked = None;
        decide(held(Some("a"), false), Some("b"), |member| {
            asked = Some(member.to_string());
            State::Live
        });
        assert_eq!(asked.as_deref(), Some("a"));
    }
}
