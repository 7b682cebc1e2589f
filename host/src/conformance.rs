//! `reconcile-host conformance`: a reconciler component against a directory of fixture cases, the same
//! suite for a guest in any language. The host's own tests run this code on the Rust, JavaScript and
//! Python MyApp guests.
//!
//! Each subdirectory of the fixtures directory is one case, run in name order:
//!
//! | file | content |
//! | --- | --- |
//! | `parent.yaml` | the parent object |
//! | `observed.yaml` | optional: the observed children, multi-document YAML |
//! | `expected.yaml` | the desired children, multi-document YAML (absent: no children) |
//! | `expected-status.yaml` | the status object (absent: the guest must answer no status) |
//! | `expected-error.txt` | instead of the two above: a substring of the error the guest must return |
//!
//! Answers are compared structurally (key order and formatting do not matter; list order does), and a
//! case also fails if its answer breaks the safety rules the controller enforces. A failure names the
//! first difference as a JSON pointer.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::Value;

use crate::cli::ConformanceArgs;
use crate::guest::{GuestError, Module, Request, Runtime};
use crate::render::read_documents;
use crate::validate::{Rules, validate};

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

/// The `conformance` command: loads the module, runs every case, prints the report; an error if any
/// case failed (so the process exits non-zero).
pub fn conformance(args: &ConformanceArgs, out: &mut impl std::io::Write) -> anyhow::Result<()> {
    let runtime = Runtime::new(args.runtime.config())?;
    let module = Module::load_file(&runtime, &args.module)?;
    if args.children.is_empty() {
        eprintln!("note: no --child given, so child kinds are not checked against an allow-list");
    }
    let rules = Rules::new((!args.children.is_empty()).then(|| args.children.clone()));
    let report = run(&module, &args.fixtures, &rules)?;
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
        let case = Case::read(&dir)?;
        let failure = case.check(module, rules).err();
        cases.push(CaseResult {
            name: case.name,
            failure,
        });
    }
    Ok(Report {
        module: module.digest().to_string(),
        fixtures: fixtures.to_path_buf(),
        cases,
    })
}

/// One fixture case, read from its directory.
struct Case {
    name: String,
    parent: Value,
    observed: Vec<Value>,
    expected: Expected,
}

enum Expected {
    Answer {
        children: Vec<Value>,
        status: Option<Value>,
    },
    /// A substring of the guest's error.
    Error(String),
}

impl Case {
    fn read(dir: &Path) -> anyhow::Result<Case> {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let parent = read_documents(&dir.join("parent.yaml"))?
            .into_iter()
            .next()
            .with_context(|| format!("case {name}: parent.yaml holds no object"))?;
        let error = dir.join("expected-error.txt");
        let expected = if error.exists() {
            let text = std::fs::read_to_string(&error)
                .with_context(|| format!("reading {}", error.display()))?;
            Expected::Error(text.trim().to_string())
        } else {
            let status = dir.join("expected-status.yaml");
            Expected::Answer {
                children: optional_documents(&dir.join("expected.yaml"))?,
                status: if status.exists() {
                    read_documents(&status)?.into_iter().next()
                } else {
                    None
                },
            }
        };
        Ok(Case {
            name,
            parent,
            observed: optional_documents(&dir.join("observed.yaml"))?,
            expected,
        })
    }

    /// `Err` says why the guest's answer is not the expected one.
    fn check(&self, module: &Module, rules: &Rules) -> Result<(), String> {
        let namespace = self.parent["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default");
        let tag = format!(
            "{namespace}/{}",
            self.parent["metadata"]["name"].as_str().unwrap_or("?")
        );
        let request = Request {
            parent: self.parent.to_string(),
            children: self.observed.iter().map(Value::to_string).collect(),
            finalizing: false,
        };
        let result = module.call(&tag, &request);
        match (&self.expected, result) {
            (Expected::Error(want), Err(GuestError::Rejected(message))) => {
                if message.contains(want.as_str()) {
                    Ok(())
                } else {
                    Err(format!("the error {message:?} does not contain {want:?}"))
                }
            }
            (Expected::Error(want), Err(other)) => Err(format!(
                "expected the guest to return an error containing {want:?}, but: {other}"
            )),
            (Expected::Error(want), Ok(_)) => Err(format!(
                "expected the guest to return an error containing {want:?}, but it answered"
            )),
            (Expected::Answer { .. }, Err(e)) => Err(e.to_string()),
            (Expected::Answer { children, status }, Ok(answer)) => {
                let got_status = answer.status.clone().map(Value::Object);
                let differences = [
                    difference(
                        "children",
                        &Value::from(children.clone()),
                        &answer.children.clone().into(),
                    ),
                    difference("status", &status.clone().into(), &got_status.into()),
                ];
                if let Some(first) = differences.into_iter().flatten().next() {
                    return Err(first);
                }
                if answer.finalized || answer.requeue_after.is_some() {
                    return Err(format!(
                        "unexpected finalized: {} / requeue-after: {:?}",
                        answer.finalized, answer.requeue_after
                    ));
                }
                validate(&answer, namespace, rules)
                    .map(drop)
                    .map_err(|e| e.to_string())
            }
        }
    }
}

fn optional_documents(path: &Path) -> anyhow::Result<Vec<Value>> {
    if path.exists() {
        read_documents(path)
    } else {
        Ok(Vec::new())
    }
}

/// The first place where `got` differs from `expected`, as `what` plus a JSON pointer, or `None`.
fn difference(what: &str, expected: &Value, got: &Value) -> Option<String> {
    first_difference(String::new(), expected, got).map(|(pointer, why)| {
        let at = if pointer.is_empty() { "" } else { " at " };
        format!("{what}{at}{pointer}: {why}")
    })
}

fn first_difference(pointer: String, expected: &Value, got: &Value) -> Option<(String, String)> {
    match (expected, got) {
        (Value::Object(want), Value::Object(have)) => {
            for (key, value) in want {
                let path = format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1"));
                match have.get(key) {
                    None => return Some((path, format!("missing, expected {value}"))),
                    Some(other) => {
                        if let Some(found) = first_difference(path, value, other) {
                            return Some(found);
                        }
                    }
                }
            }
            have.iter()
                .find(|(key, _)| !want.contains_key(*key))
                .map(|(key, value)| {
                    let path = format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1"));
                    (path, format!("unexpected {value}"))
                })
        }
        (Value::Array(want), Value::Array(have)) => {
            let pairs = want.iter().zip(have).enumerate();
            for (i, (value, other)) in pairs {
                if let Some(found) = first_difference(format!("{pointer}/{i}"), value, other) {
                    return Some(found);
                }
            }
            (want.len() != have.len()).then(|| {
                (
                    pointer,
                    format!("expected {} items, got {}", want.len(), have.len()),
                )
            })
        }
        _ if expected == got => None,
        _ => Some((pointer, format!("expected {expected}, got {got}"))),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::difference;

    #[test]
    fn names_the_first_difference_as_a_json_pointer() {
        let want =
            json!([{"metadata": {"labels": {"example.com/x": "a"}}, "spec": {"replicas": 3}}]);
        assert_eq!(difference("children", &want, &want.clone()), None);
        let got =
            json!([{"metadata": {"labels": {"example.com/x": "b"}}, "spec": {"replicas": 3}}]);
        assert_eq!(
            difference("children", &want, &got).unwrap(),
            r#"children at /0/metadata/labels/example.com~1x: expected "a", got "b""#
        );
        let got = json!([{"metadata": {"labels": {"example.com/x": "a"}}, "spec": {"replicas": 3, "paused": true}}]);
        assert_eq!(
            difference("children", &want, &got).unwrap(),
            "children at /0/spec/paused: unexpected true"
        );
        assert_eq!(
            difference("children", &want, &json!([])).unwrap(),
            "children: expected 1 items, got 0"
        );
        assert_eq!(
            difference("status", &json!({"phase": "Ready"}), &json!(null)).unwrap(),
            r#"status: expected {"phase":"Ready"}, got null"#
        );
    }
}
