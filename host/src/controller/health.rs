//! What one reconciler's owner needs to know about it, gathered while it runs: which parents fail,
//! whether its watches work, and whether its latest module was refused or could not be had. `serve`
//! reports it on the `Reconciler` object; `run` has no such object and only records it.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::source::ModuleProblem;

/// Shared by the reconciles, the watches and the hot swap of one controller.
#[derive(Debug, Default)]
pub struct ReconcilerHealth {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Parent key (`namespace/name`) → the reason its last reconcile failed.
    failing: BTreeMap<String, String>,
    /// The last watch error, cleared by the next watch event that succeeds.
    watch_error: Option<String>,
    /// Why the latest module version was refused or could not be had, cleared when one is accepted.
    module_problem: Option<ModuleProblem>,
}

/// A copy of the health at one moment (the failing parents: `failing_live`, which leaves out the
/// deleted ones).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HealthReport {
    pub watch_error: Option<String>,
    pub module_problem: Option<ModuleProblem>,
}

impl ReconcilerHealth {
    pub fn parent_result(&self, key: &str, failure: Option<&str>) {
        let mut state = self.lock();
        match failure {
            Some(reason) => {
                state.failing.insert(key.to_string(), reason.to_string());
            }
            None => {
                state.failing.remove(key);
            }
        }
    }

    pub fn watch_result(&self, error: Option<String>) {
        let mut state = self.lock();
        if error.is_some() || state.watch_error.is_some() {
            state.watch_error = error;
        }
    }

    pub fn module_result(&self, problem: Option<ModuleProblem>) {
        self.lock().module_problem = problem;
    }

    /// The failing parents for which `live` holds: a parent deleted while failing is never reconciled
    /// again to clear its entry.
    pub fn failing_live(&self, live: impl Fn(&str) -> bool) -> Vec<(String, String)> {
        self.lock()
            .failing
            .iter()
            .filter(|(key, _)| live(key))
            .map(|(key, reason)| (key.clone(), reason.clone()))
            .collect()
    }

    pub fn report(&self) -> HealthReport {
        let state = self.lock();
        HealthReport {
            watch_error: state.watch_error.clone(),
            module_problem: state.module_problem.clone(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("health lock poisoned")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parent_that_succeeds_again_no_longer_fails() {
        let health = ReconcilerHealth::default();
        health.parent_result("a/one", Some("ApplyFailed"));
        health.parent_result("a/two", Some("GuestTrapped"));
        health.parent_result("a/one", None);
        let failing = health.failing_live(|_| true);
        assert_eq!(failing.len(), 1);
        assert_eq!(failing[0], ("a/two".into(), "GuestTrapped".into()));
    }

    #[test]
    fn deleted_parents_are_not_counted_as_failing() {
        let health = ReconcilerHealth::default();
        health.parent_result("a/gone", Some("GuestTrapped"));
        health.parent_result("a/here", Some("ApplyFailed"));
        let failing = health.failing_live(|key| key != "a/gone");
        assert_eq!(failing, vec![("a/here".into(), "ApplyFailed".into())]);
    }

    #[test]
    fn watch_and_module_errors_clear_when_resolved() {
        let health = ReconcilerHealth::default();
        health.watch_result(Some("403 forbidden".into()));
        health.module_result(Some(ModuleProblem::Refused("not a component".into())));
        assert_eq!(
            health.report().watch_error.as_deref(),
            Some("403 forbidden")
        );
        health.watch_result(None);
        health.module_result(None);
        assert_eq!(health.report(), HealthReport::default());
    }
}
