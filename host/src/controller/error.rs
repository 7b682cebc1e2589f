//! Why a reconcile failed. Each variant becomes the reason of the parent's `Ready=False` condition and
//! of a Warning Event, and a label of the error metric.

use crate::guest::GuestError;
use crate::related::SelectorError;
use crate::validate::ValidationError;

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error(transparent)]
    Guest(#[from] GuestError),
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    #[error("the module's `related` failed: {0}")]
    Related(#[source] GuestError),
    #[error(transparent)]
    RelatedRefused(#[from] SelectorError),
    #[error("applying {child}: {source}")]
    Apply {
        child: String,
        #[source]
        source: kube::Error,
    },
    /// The create-only write of a child no cache held was refused (other than by `AlreadyExists`).
    #[error("creating {child}: {source}")]
    Create {
        child: String,
        #[source]
        source: kube::Error,
    },
    /// Reading the object that made a create-only write fail with `AlreadyExists`.
    #[error("looking up {child}: {source}")]
    Lookup {
        child: String,
        #[source]
        source: kube::Error,
    },
    #[error(
        "{child} is controlled by {controller} (uid {uid}), not by this parent: refused, nothing applied"
    )]
    ChildOwnedByOther {
        child: String,
        controller: String,
        uid: String,
    },
    #[error(
        "{child} already exists and nothing controls it: refused, nothing applied (the host adopts such objects only with --adopt-orphans)"
    )]
    ChildExists { child: String },
    #[error("deleting {child}: {source}")]
    Prune {
        child: String,
        #[source]
        source: kube::Error,
    },
    #[error("updating the parent: {0}")]
    Parent(#[source] kube::Error),
    #[error("the parent has no {0}")]
    MissingMetadata(&'static str),
    #[error("guest call was cancelled: {0}")]
    Join(#[from] tokio::task::JoinError),
}

impl ReconcileError {
    /// A short CamelCase word for conditions, Events and metrics.
    pub fn reason(&self) -> &'static str {
        match self {
            ReconcileError::Guest(e) => e.reason(),
            ReconcileError::Invalid(_) => "InvalidGuestOutput",
            ReconcileError::Related(_) => "GuestRelatedFailed",
            ReconcileError::RelatedRefused(e) => e.reason(),
            ReconcileError::Apply { .. } => "ApplyFailed",
            ReconcileError::Create { .. } => "CreateFailed",
            ReconcileError::Lookup { .. } => "ChildLookupFailed",
            ReconcileError::ChildOwnedByOther { .. } => "ChildOwnedByOther",
            ReconcileError::ChildExists { .. } => "ChildExists",
            ReconcileError::Prune { .. } => "PruneFailed",
            ReconcileError::Parent(_) => "ParentUpdateFailed",
            ReconcileError::MissingMetadata(_) => "InvalidParent",
            ReconcileError::Join(_) => "GuestCallCancelled",
        }
    }

    /// Whether the parent itself is gone: a write to it answered 404 because it was deleted during
    /// the reconcile, or because a reconcile from a cache that still held it followed the removal of
    /// its last finalizer. Nothing is left to reconcile, and nowhere to report a failure.
    pub fn parent_gone(&self) -> bool {
        matches!(self, ReconcileError::Parent(kube::Error::Api(status)) if status.code == 404)
    }
}

/// The parent's name; every object the API server returns has one.
pub fn name_of(object: &kube::core::DynamicObject) -> Result<&str, ReconcileError> {
    object
        .metadata
        .name
        .as_deref()
        .ok_or(ReconcileError::MissingMetadata("name"))
}

/// The parent's UID, which its children's controller ownerReference carries.
pub fn uid_of(object: &kube::core::DynamicObject) -> Result<&str, ReconcileError> {
    object
        .metadata
        .uid
        .as_deref()
        .ok_or(ReconcileError::MissingMetadata("uid"))
}

#[cfg(test)]
mod tests {
    use kube::core::Status;

    use super::ReconcileError;

    fn parent_write_answered(code: u16) -> ReconcileError {
        ReconcileError::Parent(kube::Error::Api(Box::new(
            Status::failure("", "").with_code(code),
        )))
    }

    #[test]
    fn only_a_404_on_the_parent_says_it_is_gone() {
        assert!(parent_write_answered(404).parent_gone());
        assert!(!parent_write_answered(409).parent_gone());
        assert!(!parent_write_answered(403).parent_gone());
        assert!(!ReconcileError::MissingMetadata("uid").parent_gone());
    }
}
