//! The ring leader's passes over a ring that changes: what it writes, pass after pass, without a
//! server (the writes are `Work`; what the server answers is simulated by the next pass's input).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use super::super::fixtures::{lease, parent};
use super::*;

const SHARD: &str = "shard.reconcile-host.dev/myapp";
const DRAIN: &str = "drain.reconcile-host.dev/myapp";

/// The parents `app-0`..`app-19`, at `version`, each labelled for the member `held` names.
fn parents(version: &str, held: impl Fn(&str) -> Option<String>) -> Marks {
    let mut marks = Marks::new(SHARD, DRAIN);
    for i in 0..20 {
        let name = format!("app-{i}");
        let member = held(&format!("ns/{name}"));
        let labels: Vec<(&str, &str)> = member.iter().map(|m| (SHARD, m.as_str())).collect();
        marks.apply(watcher::Event::Apply(parent(&name, version, &labels)));
    }
    marks
}

/// The keys of the parents of `marks` whose label names `member`.
fn held_by<'m>(marks: &'m Marks, member: &str) -> Vec<&'m str> {
    (marks.iter())
        .filter(|(_, mark)| mark.member.as_deref() == Some(member))
        .map(|(key, _)| key)
        .collect()
}

/// Each label write of `work` as (parent key, action, member), in order.
fn labels(work: &[Work]) -> Vec<(String, &'static str, Option<String>)> {
    (work.iter())
        .filter_map(|w| match w {
            Work::Label {
                key, action, to, ..
            } => Some((key.clone(), *action, to.clone())),
            Work::Fence { .. } | Work::Forget { .. } => None,
        })
        .collect()
}

/// The member each label write of `work` names as the one its parent moved from.
fn moved_from(work: &[Work]) -> BTreeSet<Option<&str>> {
    (work.iter())
        .filter_map(|w| match w {
            Work::Label { moved_from, .. } => Some(moved_from.as_deref()),
            Work::Fence { .. } | Work::Forget { .. } => None,
        })
        .collect()
}

/// The members whose Lease `work` takes (or keeps taken).
fn fenced(work: &[Work]) -> Vec<&str> {
    lease_writes(work, |w| matches!(w, Work::Fence { .. }))
}

/// The members whose orphaned Lease `work` deletes.
fn forgotten(work: &[Work]) -> Vec<&str> {
    lease_writes(work, |w| matches!(w, Work::Forget { .. }))
}

fn lease_writes(work: &[Work], which: impl Fn(&Work) -> bool) -> Vec<&str> {
    (work.iter().filter(|w| which(w)))
        .filter_map(|w| match w {
            Work::Fence { member } | Work::Forget { member } => Some(member.as_str()),
            Work::Label { .. } => None,
        })
        .collect()
}

/// Simulates the server's answer to every label write of `work`: the parent written at its version.
fn written(memory: &mut Memory, work: &[Work]) {
    for w in work {
        if let Work::Label { uid, version, .. } = w {
            memory.written.insert(uid.clone(), version.clone());
        }
    }
}

#[test]
fn the_leader_assigns_drains_to_a_joining_member_and_moves_a_lapsed_members_parents_once_fenced() {
    let start = Instant::now();
    let at = |s| start + Duration::from_secs(s);
    let mut ring = Ring::default();
    let mut memory = Memory::default();
    let on = |members: &[&'static str]| {
        let members = members.to_vec();
        move |key: &str| assign(key, members.iter().copied()).map(String::from)
    };

    // New parents: each assigned to its member on the live ring, once.
    ring.observe(&[lease("a", "a", 0), lease("b", "b", 0)], at(0));
    let work = memory.decide(&parents("1", |_| None), &mut ring, at(0));
    let expected: BTreeSet<_> = (parents("1", on(&["a", "b"])).iter())
        .map(|(key, mark)| {
            let to = mark.member.as_deref().map(String::from);
            (key.to_string(), "assign", to)
        })
        .collect();
    assert_eq!(labels(&work).len(), expected.len());
    assert_eq!(labels(&work).into_iter().collect::<BTreeSet<_>>(), expected);
    assert!(fenced(&work).is_empty());
    assert_eq!(
        moved_from(&work),
        [None].into(),
        "new parents moved from nobody"
    );
    written(&mut memory, &work);
    // The cache still shows the versions written from: nothing is written twice.
    let again = memory.decide(&parents("1", |_| None), &mut ring, at(0));
    assert!(again.is_empty(), "{again:?}");

    // c joins: the parents that now belong to c are asked from their member; the rest stay.
    ring.observe(
        &[lease("a", "a", 2), lease("b", "b", 2), lease("c", "c", 2)],
        at(2),
    );
    let work = memory.decide(&parents("2", on(&["a", "b"])), &mut ring, at(2));
    let to_c: BTreeSet<_> = (held_by(&parents("2", on(&["a", "b", "c"])), "c").into_iter())
        .map(|key| (key.to_string(), "drain", None))
        .collect();
    assert!(!to_c.is_empty());
    assert_eq!(labels(&work).len(), to_c.len());
    assert_eq!(labels(&work).into_iter().collect::<BTreeSet<_>>(), to_c);

    // Released (labels removed by their member), they are assigned to c.
    let released = |key: &str| on(&["a", "b", "c"])(key).filter(|m| m != "c");
    let work = memory.decide(&parents("3", released), &mut ring, at(3));
    assert!(
        labels(&work)
            .iter()
            .all(|(_, action, to)| *action == "assign" && to.as_deref() == Some("c"))
    );
    assert_eq!(labels(&work).len(), to_c.len());

    // b stops renewing: once watched unrenewed for the Lease's duration, its Lease is taken first
    // (one write, whatever it holds), and none of its parents move yet.
    let settled = parents("4", on(&["a", "b", "c"]));
    let b_holds = held_by(&settled, "b").len();
    assert!(b_holds > 0);
    ring.observe(
        &[lease("a", "a", 12), lease("b", "b", 2), lease("c", "c", 12)],
        at(12),
    );
    let work = memory.decide(&settled, &mut ring, at(12));
    assert_eq!(fenced(&work), ["b"]);
    assert!(labels(&work).is_empty(), "{work:?}");

    // Taken (held by the leader, a): b's parents move at once to their member on the live ring, and
    // b's Lease is kept taken while it still holds parents, renewed every other pass at most.
    ring.observe(
        &[
            lease("a", "a", 13),
            lease("b", "a", 13),
            lease("c", "c", 13),
        ],
        at(13),
    );
    let work = memory.decide(&settled, &mut ring, at(13));
    let moved = labels(&work);
    assert_eq!(moved.len(), b_holds);
    assert_eq!(
        moved_from(&work),
        [Some("b")].into(),
        "moved from b, which cannot say so itself"
    );
    for (key, action, to) in &moved {
        assert_eq!(*action, "reassign");
        assert_eq!(to, &on(&["a", "c"])(key));
    }
    assert_eq!(fenced(&work), ["b"]);
    written(&mut memory, &work);
    let work = memory.decide(&settled, &mut ring, at(14));
    assert!(work.is_empty(), "{work:?}");
    let work = memory.decide(&settled, &mut ring, at(15));
    assert_eq!(
        fenced(&work),
        ["b"],
        "kept taken while the cache shows it holding parents"
    );

    // Once its parents moved, b's Lease is let go.
    let work = memory.decide(&parents("5", on(&["a", "c"])), &mut ring, at(17));
    assert!(work.is_empty(), "{work:?}");

    // Unrenewed for a minute, b's Lease is an orphan: deleted, unless a parent still names b.
    let taken = lease("b", "a", 13);
    ring.observe(&[lease("a", "a", 73), taken, lease("c", "c", 73)], at(73));
    let work = memory.decide(&settled, &mut ring, at(73));
    assert!(forgotten(&work).is_empty(), "b still named: {work:?}");
    let work = memory.decide(&parents("6", on(&["a", "c"])), &mut ring, at(73));
    assert_eq!(forgotten(&work), ["b"]);
    assert!(
        labels(&work).is_empty() && fenced(&work).is_empty(),
        "{work:?}"
    );
}
