//! Sharding: the parents of one reconciler spread over its replicas, each reconciling only its own
//! share, so that a platform serving many teams is not bound to one replica. Kubernetes Leases for
//! membership and labels for assignment (the design of timebertt/kubernetes-controller-sharding,
//! with no sharder to install: the ring's leader is one of the replicas).
//!
//! # Labels (`crate::names`, one scheme with the identity label)
//! The ring is named by the reconciler's identity label (`run`: its name; `serve`: see below). A
//! replica's shard Lease carries `reconcile-host.dev/ring=<ring>` and
//! `reconcile-host.dev/member=<member>` (the member: the Pod's name as a label value; the Lease's
//! holder is that name too). A parent carries `shard.reconcile-host.dev/<reconciler>=<member>`, and
//! `drain.reconcile-host.dev/<reconciler>=true` while its member is asked to let it go, and once it
//! left a member the annotation `moved.reconcile-host.dev/<reconciler>=<member it left>`. The keys
//! name the reconciler, so two reconcilers of one kind (two decorators of Namespace) shard
//! independently.
//!
//! # Membership (`membership`, `ring`)
//! Each replica holds a Lease of its own with the machinery of the leader election (`lease::Elector`:
//! renewed every 2 s, its `Fence` closing 7 s after the start of the last renewal, stood for again
//! after a loss without ending the process). The live Leases with the ring's label are the ring: a
//! reflector watches them, and a member is live while this observer has seen its record renewed
//! within the Lease's duration, on its own clock, as `elector::decide` judges (`ring`). A Lease left
//! unrenewed for a minute, once no parent names its member, is deleted by the ring's leader.
//!
//! # Assignment (`assign`, `decide`)
//! One replica, the holder of the reconciler's leader Lease (the one `--leader-election` uses), is
//! the ring's leader. It watches the parents' metadata (not their bodies), hashes each onto the live
//! ring by rendezvous hashing (`assign`: a member joining or leaving moves only its own share) and
//! writes the member's name in the shard label: one write per parent when assigned or moved,
//! counted. Its writes pass the leader Lease's fence. Each replica's parent watch selects its own
//! label (`shard...=<me>`), so the API server filters what it caches.
//!
//! # Handover without overlap (`decide`)
//! A replica writes for a parent only while two things hold: its own shard Lease (its fence: the same
//! `lease::Fence` in its clients' stack, so a paused or cut-off replica sends nothing), and the
//! parent's label naming it. Parents change member only so:
//! - From a live member: the leader sets the drain label; the member, in a reconcile of that parent
//!   (kube-runtime never runs two reconciles of one object at once), removes both labels instead of
//!   calling the guest, with the parent's resourceVersion as precondition; only then does the leader
//!   assign the parent again. So the old member has finished and released it before the new one can
//!   see it.
//! - From a member that is gone: once the leader has watched its Lease unrenewed for its duration
//!   (or released, or missing for as long), the member's fence has closed; the leader then takes the
//!   member's Lease, a write conditional on the resourceVersion it judged, which fails if the member
//!   renewed meanwhile (a missing Lease it makes anew, held by itself). Held by the leader, the Lease is out of the member's reach until it has
//!   watched the leader's record unrenewed for a whole duration (the member stands again, as after
//!   any loss), and the leader moves its parents at once. A member that takes its Lease again reads
//!   its parents afresh before it reconciles: its old cache may hold parents moved meanwhile. And a
//!   reconcile it began before the loss writes nothing after it, even once the Lease is won back:
//!   the fence admits a write only in the tenure its reconcile began in (`Fence::within_tenure`).
//! - A replica shutting down stops its controller (running reconciles finish), then releases its
//!   Lease; the leader fences and moves its parents at once, without waiting for a duration.
//!
//! # Decorators and cluster-scoped parents
//! They are labelled too: the drain handshake needs the label as its point of synchronization, and
//! without it every replica would cache every parent. The key is the host's own (our prefix, the
//! reconciler's name), written with the host's field manager, so the kind's owner keeps it through
//! its own applies; the cost is one write per parent when assigned or moved. The leader assigns only
//! parents the decorator's selector takes (its watch selects them). One that stops matching stays
//! with its member, which releases its children as an unsharded decorator does; it is not moved
//! again until it matches again (a second watch on the shard label's presence would let the leader
//! follow it: not built). Cluster-scoped parents need nothing else: the key has no namespace part.
//!
//! # `run` and `serve`
//! `run --sharded`: one ring per reconciler, named by its identity, its Leases in the leader
//! election's namespace. `serve`: one ring for the platform (one shard Lease per replica, not one per
//! reconciler and replica: a hundred reconcilers on three replicas would renew 300 Leases every two
//! seconds), and one shard label per reconciler on its parents, written through the reconciler's
//! impersonating client, so what the host writes on parents is written as the reconciler's
//! ServiceAccount (which then needs `patch` on its parent kind).
//!
//! # Children and related objects
//! Children carry the shard label of their parent's member and their parent's UID
//! (`reconcile-host.dev/parent-uid`), written with every apply (no extra write while they do not
//! change); a member's child caches select its own label, plus the children no member labelled yet
//! (made before the reconciler was sharded), which every member caches until its first apply labels
//! them. A parent's first reconcile in each of its member's tenures reads the parent, and may list its
//! children by the parent-UID label, from the API server (`member`): after a lost Lease the parent
//! cache may hold parents moved away meanwhile, and a parent that just moved (its moved annotation
//! names another member) has its children labelled for the member it left, in no cache of its new
//! one; a parent that never moved is not listed for. Its apply then labels the children for the new
//! member. Related objects are not the host's to write: their caches do not divide by label; each
//! member caches them whole.
//!
//! # The pieces
//! `assign`, `ring`, `decide` and `member::claim` decide (pure, table-tested); `membership` holds
//! this replica's shard Lease and observes the ring; `assigner` is the ring leader's loop, over its
//! compact table of the parents (`marks`);
//! `controller::claim` carries out a member's claim inside each reconcile.

pub mod assign;
pub mod assigner;
pub mod decide;
#[cfg(test)]
mod fixtures;
pub mod marks;
pub mod member;
pub mod membership;
pub mod ring;

pub use assigner::Assigner;
pub use member::{Claim, Member};
pub use membership::{Joined, Membership, ShardSettings};
