//! The decision before the guest is called: from the parent, whether this reconciler selects it and
//! the host's finalizer, what a reconcile does first (release it, add the finalizer, leave it to
//! garbage collection, or call the guest, finalizing or not); and for a release, whether the guest
//! is called at all and what its answer leads to.

use std::time::Duration;

use kube::core::DynamicObject;

use super::super::observe::children::Observed;
use super::plan::Prune;
use crate::guest::Answer;

/// When a guest is not done finalizing a released parent and names no time of its own, ask again
/// after this.
pub const FINALIZE_AGAIN: Duration = Duration::from_secs(10);

/// What a reconcile of a parent does before (and instead of) anything else.
#[derive(Debug, PartialEq)]
pub enum Start<'f> {
    /// The selector no longer takes it: finalize and delete what it controls (`release`).
    Release,
    /// A live parent without the host's finalizer: add it (the update triggers the next reconcile).
    AddFinalizer(&'f str),
    /// Being deleted and not held by the host's finalizer: garbage collection removes the children.
    AwaitGarbageCollection,
    /// Call the guest; `finalizing` while the parent is deleted and held by the host's finalizer.
    Call { finalizing: bool },
}

/// What a reconcile of `parent` does first, given whether this reconciler `selects` it and its
/// `finalizer`.
pub fn start<'f>(parent: &DynamicObject, selects: bool, finalizer: Option<&'f str>) -> Start<'f> {
    if !selects {
        return Start::Release;
    }
    let deleting = parent.metadata.deletion_timestamp.is_some();
    let finalizing = match finalizer {
        Some(finalizer) if deleting => has_finalizer(parent, finalizer),
        Some(finalizer) if !has_finalizer(parent, finalizer) => {
            return Start::AddFinalizer(finalizer);
        }
        _ => false,
    };
    match deleting && !finalizing {
        true => Start::AwaitGarbageCollection,
        false => Start::Call { finalizing },
    }
}

/// Whether the parent's finalizers hold `finalizer`.
pub fn has_finalizer(parent: &DynamicObject, finalizer: &str) -> bool {
    parent
        .metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == finalizer)
}

/// The host's finalizer a released parent still carries, if any.
pub fn held<'f>(parent: &DynamicObject, finalizer: Option<&'f str>) -> Option<&'f str> {
    finalizer.filter(|finalizer| has_finalizer(parent, finalizer))
}

/// Whether a release calls the guest: a parent that controls nothing of this reconciler's (`observed`)
/// and carries no finalizer of it costs no call and no write.
pub fn release_calls_guest(observed: &[Observed<'_>], held: Option<&str>) -> bool {
    !observed.is_empty() || held.is_some()
}

/// What the guest's finalize `answer` leads a release to.
#[derive(Debug, PartialEq)]
pub enum Released<'a> {
    /// Not done finalizing: ask again after this.
    Again(Duration),
    /// Finalized: delete every observed child, then remove the finalizer if it is held.
    Done {
        prunes: Vec<Prune<'a>>,
        remove_finalizer: Option<String>,
    },
}

/// The release after the guest's `answer`, for the `observed` children (as [`Prune`]s, named as
/// conditions name them) and the `held` finalizer.
pub fn released<'a>(
    answer: &Answer,
    observed: &[Observed<'a>],
    held: Option<&str>,
    cluster_scoped: bool,
) -> Released<'a> {
    if !answer.finalized {
        return Released::Again(answer.requeue_after.unwrap_or(FINALIZE_AGAIN));
    }
    Released::Done {
        prunes: observed
            .iter()
            .map(|o| Prune::of(o, cluster_scoped))
            .collect(),
        remove_finalizer: held.map(str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    use super::super::fixtures::{answer, observed_in, parent};
    use super::*;

    #[test]
    fn what_a_reconcile_does_first() {
        let live = parent(&[]);
        let held = parent(&["example.com/f"]);
        let mut deleted_held = held.clone();
        deleted_held.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
        let mut deleted = live.clone();
        deleted.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
        let f = Some("example.com/f");
        let table: [(&str, &DynamicObject, bool, Option<&str>, Start); 7] = [
            ("not selected", &held, false, f, Start::Release),
            (
                "live, no finalizer set",
                &live,
                true,
                None,
                Start::Call { finalizing: false },
            ),
            (
                "live, finalizer missing",
                &live,
                true,
                f,
                Start::AddFinalizer("example.com/f"),
            ),
            (
                "live, finalizer held",
                &held,
                true,
                f,
                Start::Call { finalizing: false },
            ),
            (
                "deleted, held",
                &deleted_held,
                true,
                f,
                Start::Call { finalizing: true },
            ),
            (
                "deleted, not held",
                &deleted,
                true,
                f,
                Start::AwaitGarbageCollection,
            ),
            (
                "deleted, no finalizer set",
                &deleted,
                true,
                None,
                Start::AwaitGarbageCollection,
            ),
        ];
        for (case, parent, selects, finalizer, expected) in table {
            assert_eq!(start(parent, selects, finalizer), expected, "{case}");
        }
    }

    #[test]
    fn a_release_calls_the_guest_only_with_something_to_release() {
        let kinds = observed_in(&[("own", "p-uid")]);
        let observed = kinds.observe("p-uid");
        assert!(!release_calls_guest(&[], None));
        assert!(release_calls_guest(&[], Some("example.com/f")));
        assert!(release_calls_guest(&observed, None));
    }

    #[test]
    fn a_release_deletes_everything_once_finalized_and_asks_again_before() {
        let kinds = observed_in(&[("own", "p-uid")]);
        let observed = kinds.observe("p-uid");
        let mut not_yet = answer(vec![]);
        assert_eq!(
            released(&not_yet, &observed, None, false),
            Released::Again(FINALIZE_AGAIN)
        );
        not_yet.requeue_after = Some(Duration::from_secs(3));
        assert_eq!(
            released(&not_yet, &observed, None, false),
            Released::Again(Duration::from_secs(3))
        );
        let mut done = answer(vec![]);
        done.finalized = true;
        let Released::Done {
            prunes,
            remove_finalizer,
        } = released(&done, &observed, Some("example.com/f"), false)
        else {
            panic!("finalized");
        };
        assert_eq!(
            prunes.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(),
            ["ConfigMap/own"]
        );
        assert_eq!(remove_finalizer.as_deref(), Some("example.com/f"));
    }
}
