//! `reconcile-host conformance`: a reconciler component against a directory of fixture cases, the same
//! suite for a guest in any language. The host's own tests run this code on the Rust, JavaScript and
//! Python MyApp guests.
//!
//! Each subdirectory of the fixtures directory is one case, run in name order. A reconcile case:
//!
//! | file | content |
//! | --- | --- |
//! | `parent.yaml` | the parent object |
//! | `observed.yaml` | optional: the observed children, multi-document YAML |
//! | `related.yaml` | optional: objects available as related objects, multi-document YAML; those the module's `related` selects for the parent (matched as the controller matches its caches, in the parent's namespace) reach `reconcile` |
//! | `expected.yaml` | the desired children, multi-document YAML (absent: no children) |
//! | `expected-status.yaml` | the status object (absent: the guest must answer no status) |
//! | `expected-error.txt` | instead of the two above: a substring of the error the guest must return |
//!
//! A conversion case (the module's `convert`, as the CRD conversion webhook calls it):
//!
//! | file | content |
//! | --- | --- |
//! | `object.yaml` | the object to convert |
//! | `to-api-version.txt` | the version to convert it to, e.g. `example.com/v1beta1` |
//! | `expected.yaml` | the converted object; converting it back must give `object.yaml` again |
//! | `expected-error.txt` | instead: a substring of the error the guest must return |
//!
//! Answers are compared structurally (key order and formatting do not matter; list order does), and a
//! case also fails if its answer breaks the safety rules the controller (or the webhook) enforces. A
//! failure names the first difference as a JSON pointer.

mod conversion;
mod diff;
mod expected_error;
mod reconcile;

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::Context;

use conversion::ConversionCase;
use reconcile::ReconcileCase;

use crate::guest::{Module, Runtime, RuntimeConfig};
use crate::kind::Gvk;
use crate::validate::Rules;

/// The outcome of every case of one run.
#[derive(Debug)]
pub struct Report {
    /// Digest of the module that was checked.
    pub module: String,
    pub fixtures: PathBuf,
    pub cases: Vec<CaseResult>,
}

#[derive(Debug)]
pub struct CaseResult {
    /// The case's directory name.
    pub name: String,
    /// `None` when the case passed, else what went wrong.
    pub failure: Option<String>,
}

impl Report {
    pub fn passed(&self) -> usize {
        self.cases.iter().filter(|c| c.failure.is_none()).count()
    }

    pub fn failed(&self) -> usize {
        self.cases.len() - self.passed()
    }

    pub fn is_success(&self) -> bool {
        self.failed() == 0
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "conformance of {} against {}",
            self.module,
            self.fixtures.display()
        )?;
        for case in &self.cases {
            match &case.failure {
                None => writeln!(f, "  ok    {}", case.name)?,
                Some(why) => writeln!(f, "  FAIL  {}: {why}", case.name)?,
            }
        }
        write!(f, "{} passed, {} failed", self.passed(), self.failed())
    }
}

/// The `conformance` command: loads `module` with the limits of `runtime`, runs every case under
/// `fixtures` with `children` as the allowed child kinds (none: any), prints the report; an error if
/// any case failed (so the process exits non-zero).
pub fn conformance(
    module: &Path,
    fixtures: &Path,
    children: &[Gvk],
    runtime: RuntimeConfig,
    out: &mut impl std::io::Write,
) -> anyhow::Result<()> {
    let runtime = Runtime::new(runtime)?;
    let module = Module::load_file(&runtime, module)?;
    if children.is_empty() {
        eprintln!("note: no --child given, so child kinds are not checked against an allow-list");
    }
    let rules = Rules::new((!children.is_empty()).then(|| children.to_vec()));
    let report = run(&module, fixtures, &rules)?;
    writeln!(out, "{report}")?;
    anyhow::ensure!(
        report.is_success(),
        "{} of {} cases failed",
        report.failed(),
        report.cases.len()
    );
    Ok(())
}

/// Runs every case under `fixtures` through `module`. An `Err` only for fixtures that cannot be read
/// (or none at all); what the guest gets wrong is in the report.
pub fn run(module: &Module, fixtures: &Path, rules: &Rules) -> anyhow::Result<Report> {
    let mut dirs = Vec::new();
    for entry in std::fs::read_dir(fixtures)
        .with_context(|| format!("reading the fixtures directory {}", fixtures.display()))?
    {
        let path = entry?.path();
        if path.is_dir() {
            dirs.push(path);
        }
    }
    dirs.sort();
    anyhow::ensure!(
        !dirs.is_empty(),
        "{} holds no fixture cases (one directory per case)",
        fixtures.display()
    );
    let mut cases = Vec::with_capacity(dirs.len());
    for dir in dirs {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let failure = if dir.join("object.yaml").exists() {
            ConversionCase::read(&dir, &name)?.check(module).err()
        } else {
            ReconcileCase::read(&dir, &name)?.check(module, rules).err()
        };
        cases.push(CaseResult { name, failure });
    }
    Ok(Report {
        module: module.digest().to_string(),
        fixtures: fixtures.to_path_buf(),
        cases,
    })
}
