//! A reconcile case: a parent (and its observed children) and the children and status the guest must
//! answer, or the error it must return.

use std::path::Path;

use anyhow::Context;
use serde_json::Value;

use super::diff::difference;
use super::expected_error::{check_error, expected_error};
use crate::guest::{Module, Request};
use crate::related::{RelatedError, related_from};
use crate::render::read_documents;
use crate::validate::{Rules, validate};

/// One reconcile case, read from its directory.
pub(super) struct ReconcileCase {
    parent: Value,
    observed: Vec<Value>,
    /// The objects available as related objects (`related.yaml`).
    related: Vec<Value>,
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

impl ReconcileCase {
    pub(super) fn read(dir: &Path, name: &str) -> anyhow::Result<ReconcileCase> {
        let parent = read_documents(&dir.join("parent.yaml"))?
            .into_iter()
            .next()
            .with_context(|| format!("case {name}: parent.yaml holds no object"))?;
        let expected = if let Some(error) = expected_error(dir)? {
            Expected::Error(error)
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
        Ok(ReconcileCase {
            parent,
            observed: optional_documents(&dir.join("observed.yaml"))?,
            related: optional_documents(&dir.join("related.yaml"))?,
            expected,
        })
    }

    /// `Err` says why the guest's answer is not the expected one.
    pub(super) fn check(&self, module: &Module, rules: &Rules) -> Result<(), String> {
        let namespace = self.parent["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default");
        let tag = format!(
            "{namespace}/{}",
            self.parent["metadata"]["name"].as_str().unwrap_or("?")
        );
        let related = match related_from(module, &tag, &self.parent, &self.related) {
            Ok(related) => related,
            // A guest error from `related` is the guest's answer, as one from `reconcile` is.
            Err(RelatedError::Guest(e)) => return self.unanswered(e),
            Err(other) => return Err(other.to_string()),
        };
        let request = Request {
            parent: self.parent.to_string(),
            children: self.observed.iter().map(Value::to_string).collect(),
            related,
            finalizing: false,
        };
        let result = module.call(&tag, &request);
        match (&self.expected, result) {
            (Expected::Error(want), result) => check_error(want, result.map(drop)),
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

impl ReconcileCase {
    /// The verdict on a case whose guest failed before it answered.
    fn unanswered(&self, error: crate::guest::GuestError) -> Result<(), String> {
        match &self.expected {
            Expected::Error(want) => check_error(want, Err(error)),
            Expected::Answer { .. } => Err(error.to_string()),
        }
    }
}

pub(super) fn optional_documents(path: &Path) -> anyhow::Result<Vec<Value>> {
    if path.exists() {
        read_documents(path)
    } else {
        Ok(Vec::new())
    }
}
