//! The rules a guest's child can break, named in each refusal: below both the checks of an answer
//! (`validate`) and where children may live (`placement`), which both refuse by them.

/// A safety rule a refused child (or the whole answer) broke.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum Rule {
    #[error("is {0}, not a JSON object")]
    NotAnObject(&'static str),
    #[error("has no string field `{0}`")]
    MissingField(&'static str),
    #[error("kind {api_version}/{kind} is not allow-listed (allowed: {allowed})")]
    KindNotAllowed {
        api_version: String,
        kind: String,
        allowed: String,
    },
    #[error(
        "is in namespace `{namespace}`, but children must be in the parent's namespace `{parent}`"
    )]
    OtherNamespace { namespace: String, parent: String },
    #[error(
        "is in namespace `{namespace}`, but the children of Namespace `{parent}` must be in it (the host was given no --child-namespace)"
    )]
    OutsideParentNamespace { namespace: String, parent: String },
    #[error(
        "has no metadata.namespace; a cluster-scoped parent's children must name theirs ({allowed})"
    )]
    NoNamespace { allowed: String },
    #[error("is in namespace `{namespace}`, which is not allowed ({allowed})")]
    NamespaceNotAllowed { namespace: String, allowed: String },
    #[error("name `{name}` is not a valid object name: {reason}")]
    InvalidName { name: String, reason: &'static str },
    #[error("is {size} bytes, more than the limit of {max}")]
    TooLarge { size: usize, max: usize },
    #[error("appears twice")]
    Duplicate,
    #[error("the answer has {count} children, more than the limit of {max}")]
    TooMany { count: usize, max: usize },
}
