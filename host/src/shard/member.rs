//! This replica as a member of its ring, as a reconcile sees it: which parents are its own, the
//! labels it writes on its children, and what it does with a parent the ring's leader asks it to
//! release. The decision (`claim`) is pure and table-tested; the reconcile carries it out
//! (`controller::shard`).
//!
//! Why a parent's first reconcile in each tenure reads the parent from the API server
//! (`Claim::Reconcile { fresh: true }`): after a lost Lease the parent cache may still hold parents
//! the leader moved away meanwhile. And why it then lists the parent's children from the API server
//! when the parent moved from another member (`lists_children`): the caches select by this member's
//! label, so the children of a parent that just moved here, still labelled for the member it left,
//! are in no cache of this replica; the apply that follows labels them for this member's caches. A
//! parent that never moved has its children in this member's caches (or, made before the reconciler
//! was sharded, in the cache of unlabelled children): a list would scan its namespace for nothing.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use super::membership::Joined;
use crate::identity::Identity;
use crate::lease::Fence;
use crate::names::{MANAGED_BY_LABEL, MANAGER, PARENT_UID_LABEL};

/// A parent as the member's claim reads it: its identity, version and ring labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parent<'p> {
    pub uid: &'p str,
    pub resource_version: &'p str,
    /// The member its shard label names.
    pub member: Option<&'p str>,
    /// Whether it carries the drain label.
    pub draining: bool,
}

/// What a member does with one parent it was asked to reconcile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// Another member's, or one this member released and whose cached version is the one it
    /// released: nothing.
    Skip,
    /// The leader asks for it: remove both labels, conditional on this version, and let it go.
    Release,
    /// Its own: reconcile it; `fresh`: from the API server's copy (its first in this tenure).
    Reconcile { fresh: bool },
}

/// This replica in its ring, for the reconciles of one reconciler.
pub struct Member {
    /// Its name in the ring: the value of the shard label on its parents and children.
    pub name: String,
    /// The keys of the shard and drain labels of this reconciler (`Identity`).
    pub shard_label: String,
    pub drain_label: String,
    /// The key of the annotation naming the member a parent last left.
    pub moved_annotation: String,
    /// Its own shard Lease: what its writes pass.
    pub fence: Fence,
    /// The parents it released, with the version it released: its cache may still hold that version
    /// for a moment after its release, and must not reconcile it.
    released: Mutex<HashMap<String, String>>,
    /// The parents reconciled from the API server's copy in this tenure, and the tenure (the
    /// fence's, `Fence::tenure`).
    verified: Mutex<(u64, HashSet<String>)>,
}

impl Member {
    /// Member `name` of the ring of the reconciler `identity`, writing while `fence` admits.
    pub fn new(name: String, identity: &Identity, fence: Fence) -> Member {
        Member {
            name,
            shard_label: identity.shard_label(),
            drain_label: identity.drain_label(),
            moved_annotation: identity.moved_annotation(),
            fence,
            released: Mutex::default(),
            verified: Mutex::default(),
        }
    }

    /// This replica's member of the ring it `joined`, for the reconciler `identity`.
    pub fn joining(joined: &Joined, identity: &Identity) -> Member {
        Member::new(
            joined.settings.member.clone(),
            identity,
            joined.fence.clone(),
        )
    }

    /// The current tenure: changes each time the fence opens after admitting nothing.
    pub fn tenure(&self) -> u64 {
        self.fence.tenure()
    }

    /// The label selector of its parents.
    pub fn parents(&self) -> String {
        format!("{}={}", self.shard_label, self.name)
    }

    /// The label selector of its own children (`identity`'s, labelled for this member).
    pub fn own_children(&self, identity: &Identity) -> String {
        format!("{},{}", identity.own_children(), self.parents())
    }

    /// The label selector of the children no member's label names: made before the reconciler was
    /// sharded (or before children named their reconciler). Every member caches them until its first
    /// apply labels them; a parent takes only those it controls.
    pub fn unsharded_children(&self) -> String {
        format!("{MANAGED_BY_LABEL}={MANAGER},!{}", self.shard_label)
    }

    /// The label selector of the children of the parent with `uid` that `identity` made, whichever
    /// member labelled them: what a fresh reconcile lists.
    pub fn children_of(identity: &Identity, uid: &str) -> String {
        format!("{},{PARENT_UID_LABEL}={uid}", identity.own_children())
    }

    /// The labels its applies put on a child of the parent with `uid`.
    pub fn child_labels<'a>(&'a self, uid: &'a str) -> [(&'a str, &'a str); 2] {
        [
            (self.shard_label.as_str(), self.name.as_str()),
            (PARENT_UID_LABEL, uid),
        ]
    }

    /// What to do with `parent` now, in tenure `tenure`.
    pub fn claim(&self, parent: Parent<'_>, tenure: u64) -> Claim {
        let mut released = self.released.lock().expect("released lock poisoned");
        let verified = self.verified.lock().expect("verified lock poisoned");
        let verified = verified.0 == tenure && verified.1.contains(parent.uid);
        claim(parent, &self.name, &mut released, verified)
    }

    /// Whether a fresh reconcile of a parent that last left `moved_from` lists its children from
    /// the API server: only when they may be labelled for another member.
    pub fn lists_children(&self, moved_from: Option<&str>) -> bool {
        moved_from.is_some_and(|from| from != self.name)
    }

    /// Records that `uid` was released at `resource_version`: should it come back, it is read fresh.
    pub fn released(&self, uid: &str, resource_version: &str) {
        (self.released.lock().expect("released lock poisoned"))
            .insert(uid.to_string(), resource_version.to_string());
        (self.verified.lock().expect("verified lock poisoned"))
            .1
            .remove(uid);
    }

    /// How many parents it remembers (released, or verified in this tenure).
    pub fn remembered(&self) -> usize {
        self.released.lock().expect("released lock poisoned").len()
            + self
                .verified
                .lock()
                .expect("verified lock poisoned")
                .1
                .len()
    }

    /// Forgets the parents `held` says it no longer holds (moved away, deleted): what it remembers
    /// of them is needed only while its cache may still hold them.
    pub fn retain(&self, held: impl Fn(&str) -> bool) {
        (self.released.lock().expect("released lock poisoned")).retain(|uid, _| held(uid));
        (self.verified.lock().expect("verified lock poisoned"))
            .1
            .retain(|uid| held(uid));
    }

    /// Records that `uid` was reconciled from the API server's copy in `tenure`.
    pub fn verified(&self, uid: &str, tenure: u64) {
        let mut verified = self.verified.lock().expect("verified lock poisoned");
        if verified.0 != tenure {
            *verified = (tenure, HashSet::new());
        }
        verified.1.insert(uid.to_string());
    }
}

/// The claim of `member` on `parent`; `released` holds what it released (an entry goes once a
/// newer version is seen), `verified` whether it reconciled the parent fresh in this tenure.
fn claim(
    parent: Parent<'_>,
    member: &str,
    released: &mut HashMap<String, String>,
    verified: bool,
) -> Claim {
    if parent.member != Some(member) {
        return Claim::Skip;
    }
    match released.get(parent.uid) {
        Some(version) if version == parent.resource_version => return Claim::Skip,
        // A newer version labelled for this member: the leader assigned it here again.
        Some(_) => {
            released.remove(parent.uid);
        }
        None => {}
    }
    match (parent.draining, verified) {
        (true, _) => Claim::Release,
        (false, fresh) => Claim::Reconcile { fresh: !fresh },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent<'p>(member: Option<&'p str>, draining: bool, version: &'p str) -> Parent<'p> {
        Parent {
            uid: "u1",
            resource_version: version,
            member,
            draining,
        }
    }

    #[test]
    fn a_member_reconciles_its_own_parents_releases_drained_ones_and_nothing_else() {
        use Claim::*;
        // (parent, released before at version, verified in this tenure, claim)
        let table = [
            (
                parent(Some("a"), false, "5"),
                None,
                true,
                Reconcile { fresh: false },
            ),
            (
                parent(Some("a"), false, "5"),
                None,
                false,
                Reconcile { fresh: true },
            ),
            (parent(Some("b"), false, "5"), None, true, Skip),
            (parent(None, false, "5"), None, true, Skip),
            (parent(Some("a"), true, "5"), None, true, Release),
            (parent(Some("a"), true, "5"), None, false, Release),
            // The cache still holds the version it released: nothing, not even another release.
            (parent(Some("a"), true, "5"), Some("5"), true, Skip),
            (parent(Some("a"), false, "5"), Some("5"), true, Skip),
            // Assigned here again since: its own again.
            (
                parent(Some("a"), false, "9"),
                Some("5"),
                true,
                Reconcile { fresh: false },
            ),
        ];
        for (i, (parent, before, verified, expected)) in table.into_iter().enumerate() {
            let mut released: HashMap<String, String> = before
                .map(|v: &str| ("u1".to_string(), v.to_string()))
                .into_iter()
                .collect();
            assert_eq!(
                claim(parent, "a", &mut released, verified),
                expected,
                "row {i}"
            );
        }
    }

    #[test]
    fn a_release_is_forgotten_once_the_parent_comes_back() {
        let member = Member::new("a".into(), &Identity::new("myapp"), Fence::open());
        member.released("u1", "5");
        assert_eq!(member.claim(parent(Some("a"), false, "5"), 0), Claim::Skip);
        member.verified("u1", 0);
        let back = parent(Some("a"), false, "9");
        assert_eq!(member.claim(back, 0), Claim::Reconcile { fresh: false });
        assert_eq!(member.released.lock().unwrap().len(), 0);
    }

    #[test]
    fn a_parent_released_and_assigned_back_is_read_fresh_and_gone_ones_are_forgotten() {
        let member = Member::new("a".into(), &Identity::new("myapp"), Fence::open());
        member.verified("u1", 0);
        member.released("u1", "5");
        let back = parent(Some("a"), false, "9");
        assert_eq!(member.claim(back, 0), Claim::Reconcile { fresh: true });
        member.verified("u2", 0);
        member.released("u3", "1");
        assert_eq!(member.remembered(), 2);
        member.retain(|uid| uid == "u2");
        assert_eq!(member.remembered(), 1);
    }

    #[test]
    fn only_a_parent_that_left_another_member_has_its_children_listed() {
        let member = Member::new("a".into(), &Identity::new("myapp"), Fence::open());
        assert!(member.lists_children(Some("b")), "moved from b");
        assert!(!member.lists_children(None), "never moved");
        assert!(
            !member.lists_children(Some("a")),
            "released by a, assigned back to a before any other held it"
        );
    }

    #[test]
    fn a_new_tenure_reads_every_parent_fresh_again() {
        let member = Member::new("a".into(), &Identity::new("myapp"), Fence::open());
        member.verified("u1", 3);
        let own = parent(Some("a"), false, "5");
        assert_eq!(member.claim(own, 3), Claim::Reconcile { fresh: false });
        assert_eq!(member.claim(own, 4), Claim::Reconcile { fresh: true });
    }

    #[test]
    fn the_selectors_name_the_member_and_the_reconciler() {
        let identity = Identity::new("myapp");
        let member = Member::new("host-0".into(), &identity, Fence::open());
        assert_eq!(member.parents(), "shard.reconcile-host.dev/myapp=host-0");
        assert_eq!(
            member.own_children(&identity),
            "app.kubernetes.io/managed-by=reconcile-host,reconcile-host.dev/reconciler=myapp,\
             shard.reconcile-host.dev/myapp=host-0"
        );
        assert_eq!(
            member.unsharded_children(),
            "app.kubernetes.io/managed-by=reconcile-host,!shard.reconcile-host.dev/myapp"
        );
        assert_eq!(
            Member::children_of(&identity, "u1"),
            "app.kubernetes.io/managed-by=reconcile-host,reconcile-host.dev/reconciler=myapp,\
             reconcile-host.dev/parent-uid=u1"
        );
    }
}
