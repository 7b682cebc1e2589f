//! A case that expects the guest to refuse: the expected substring (from `expected-error.txt`) and the
//! check of the guest's answer against it, shared by reconcile and conversion cases.

use std::path::Path;

use anyhow::Context;

use crate::guest::GuestError;

/// The substring of the guest's error that a case expects instead of an answer, if it does.
pub(super) fn expected_error(dir: &Path) -> anyhow::Result<Option<String>> {
    let path = dir.join("expected-error.txt");
    if !path.exists() {
        return Ok(None);
    }
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    Ok(Some(text.trim().to_string()))
}

/// `Ok` if the guest returned an error containing `want` (not a trap or any other failure).
pub(super) fn check_error(want: &str, result: Result<(), GuestError>) -> Result<(), String> {
    match result {
        Err(GuestError::Rejected(message)) if message.contains(want) => Ok(()),
        Err(GuestError::Rejected(message)) => {
            Err(format!("the error {message:?} does not contain {want:?}"))
        }
        Err(other) => Err(format!(
            "expected the guest to return an error containing {want:?}, but: {other}"
        )),
        Ok(()) => Err(format!(
            "expected the guest to return an error containing {want:?}, but it answered"
        )),
    }
}
