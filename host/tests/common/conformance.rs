//! The conformance suite (`reconcile_host::conformance`, the code behind `reconcile-host conformance`) on
//! the MyApp fixtures, for any MyApp component.

use std::path::{Path, PathBuf};

use reconcile_host::conformance::{Report, run};
use reconcile_host::guest::{Module, Runtime, RuntimeConfig};
use reconcile_host::validate::Rules;

use super::guests::repo_root;

/// The six MyApp cases: guests/myapp/fixtures.
pub fn myapp_fixtures() -> PathBuf {
    repo_root().join("guests/myapp/fixtures")
}

/// Runs every MyApp fixture through `component` with `config`, holding the answers to the controller's
/// rules for MyApp (Deployments only); fails the test with the whole report if any case fails.
pub fn assert_conforms(component: &Path, config: RuntimeConfig) -> Report {
    let runtime = Runtime::new(config).expect("runtime");
    let module = Module::load_file(&runtime, component)
        .unwrap_or_else(|e| panic!("{}: {e}", component.display()));
    let rules = Rules::new(Some(vec!["apps/v1/Deployment".parse().unwrap()]));
    let report = run(&module, &myapp_fixtures(), &rules).expect("reading the fixtures");
    assert!(report.is_success(), "{}:\n{report}", component.display());
    assert!(
        report.cases.len() >= 6,
        "expected the six MyApp fixtures:\n{report}"
    );
    report
}
