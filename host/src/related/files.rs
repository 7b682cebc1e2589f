//! Related objects without a cluster, for `render` and `conformance`: the module's selectors for a
//! parent, checked like the controller checks them, matched against the objects of a file.

use kube::core::DynamicObject;
use serde_json::Value;

use super::selector::{SelectorError, check, select};
use crate::guest::{GuestError, Module};
use crate::validate::Placement;

/// Why the related objects of a parent could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum RelatedError {
    #[error("the module's `related` failed: {0}")]
    Guest(#[source] GuestError),
    #[error(transparent)]
    Refused(#[from] SelectorError),
    #[error("related object {index} is not a Kubernetes object: {reason}")]
    NotAnObject { index: usize, reason: String },
}

/// The objects of `available` that `module`'s `related` selects for `parent` (tagged `tag` in the
/// guest's log), as JSON for the request; none for a module without `related`. No allow-list of
/// kinds (the objects given are what may be read); the namespace rule applies.
pub fn related_from(
    module: &Module,
    tag: &str,
    parent: &Value,
    available: &[Value],
) -> Result<Vec<String>, RelatedError> {
    if !module.relates() {
        return Ok(Vec::new());
    }
    let selectors = module
        .related(tag, &parent.to_string())
        .map_err(RelatedError::Guest)?;
    let namespace = parent["metadata"]["namespace"]
        .as_str()
        .unwrap_or("default");
    let selectors = check(
        &selectors,
        &Placement::ParentNamespace(namespace.into()),
        None,
    )?;
    let objects = available
        .iter()
        .enumerate()
        .map(|(index, object)| {
            serde_json::from_value::<DynamicObject>(object.clone()).map_err(|e| {
                RelatedError::NotAnObject {
                    index,
                    reason: e.to_string(),
                }
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(select(&selectors, |_| objects.iter().collect())
        .into_iter()
        .map(|object| serde_json::to_string(object).expect("objects serialize"))
        .collect())
}
