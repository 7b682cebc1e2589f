//! The conformance suite (`reconcile_host::conformance`, the code behind `reconcile-host conformance`) on
//! the MyApp fixtures, for any MyApp component.

use std::path::{Path, PathBuf};

use reconcile_host::conformance::{Report, run};
use reconcile_host::guest::{Module, Runtime, RuntimeConfig};
use reconcile_host::validate::Rules;

use super::guests::repo_root;

/// The six seed MyApp cases (v1alpha1), which every language's guest passes: guests/myapp/fixtures.
pub fn myapp_fixtures() -> PathBuf {
    repo_root().join("guests/myapp/fixtures")
}

/// MyApp v1beta1 reconcile cases and conversion cases, for guests that implement v1beta1 and `convert`.
pub fn myapp_v1beta1_fixtures() -> PathBuf {
    repo_root().join("guests/myapp/fixtures-v1beta1")
}

/// Runs every seed MyApp fixture through `component` with `config`, holding the answers to the
/// controller's rules for MyApp (Deployments only); fails the test with the whole report if any case
/// fails.
pub fn assert_conforms(component: &Path, config: RuntimeConfig) -> Report {
    assert_conforms_to(&myapp_fixtures(), component, config)
}

/// The same for the cases under `fixtures`.
pub fn assert_conforms_to(fixtures: &Path, component: &Path, config: RuntimeConfig) -> Report {
    let runtime = Runtime::new(config).expect("runtime");
    let module = Module::load_file(&runtime, component)
        .unwrap_or_else(|e| panic!("{}: {e}", component.display()));
    let rules = Rules::new(Some(vec!["apps/v1/Deployment".parse().unwrap()]));
    let report = run(&module, fixtures, &rules).expect("reading the fixtures");
    assert!(report.is_success(), "{}:\n{report}", component.display());
    report
}
