//! Whether the module's selection of related objects for a parent is accepted: its `related` call
//! answered (`GuestRelatedFailed` if not), and each selector reads an allow-listed kind where the
//! parent's children may go (`crate::related::check`: `RelatedNotAllowed`, `RelatedInvalid`).

use super::super::error::ReconcileError;
use crate::guest::{GuestError, Selector};
use crate::kind::Gvk;
use crate::related::{RelatedSelector, check};
use crate::validate::Placement;

/// The checked selectors of the module's `related` `answer` for a parent whose children go where
/// `placement` says, under the operator's `allowed` kinds; or the refusal, with its reason.
pub fn checked_selection(
    answer: Result<Vec<Selector>, GuestError>,
    placement: &Placement,
    allowed: &[Gvk],
) -> Result<Vec<RelatedSelector>, ReconcileError> {
    let selectors = answer.map_err(ReconcileError::Related)?;
    Ok(check(&selectors, placement, Some(allowed))?)
}
