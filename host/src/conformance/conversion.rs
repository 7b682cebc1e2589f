//! A conversion case: an object, the version to convert it to, and the converted object the guest must
//! answer (or the error it must return). Each answer is also converted back: a conversion that loses a
//! field fails, because the API server converts every read and write of a non-storage version.

use std::path::Path;

use anyhow::Context;
use serde_json::Value;

use super::diff::difference;
use super::expected_error::{check_error, expected_error};
use crate::guest::Module;
use crate::render::read_documents;

/// One conversion case, read from its directory.
pub(super) struct ConversionCase {
    object: Value,
    to_api_version: String,
    expected: Expected,
}

enum Expected {
    Object(Value),
    /// A substring of the guest's error.
    Error(String),
}

impl ConversionCase {
    pub(super) fn read(dir: &Path, name: &str) -> anyhow::Result<ConversionCase> {
        let first = |file: &str| -> anyhow::Result<Value> {
            read_documents(&dir.join(file))?
                .into_iter()
                .next()
                .with_context(|| format!("case {name}: {file} holds no object"))
        };
        let to = dir.join("to-api-version.txt");
        let to_api_version = std::fs::read_to_string(&to)
            .with_context(|| format!("case {name}: reading {}", to.display()))?
            .trim()
            .to_string();
        let expected = match expected_error(dir)? {
            Some(error) => Expected::Error(error),
            None => Expected::Object(first("expected.yaml")?),
        };
        Ok(ConversionCase {
            object: first("object.yaml")?,
            to_api_version,
            expected,
        })
    }

    /// `Err` says why the guest's conversion is not the expected one, or does not convert back.
    pub(super) fn check(&self, module: &Module) -> Result<(), String> {
        let result = module.convert(&self.object, &self.to_api_version);
        let expected = match &self.expected {
            Expected::Error(want) => return check_error(want, result.map(drop)),
            Expected::Object(expected) => expected,
        };
        let converted = result.map_err(|e| e.to_string())?;
        if let Some(first) = difference("converted object", expected, &converted) {
            return Err(first);
        }
        let from = self.object["apiVersion"].as_str().unwrap_or_default();
        let back = module
            .convert(&converted, from)
            .map_err(|e| format!("converting back to {from}: {e}"))?;
        match difference("object converted back", &self.object, &back) {
            Some(lost) => Err(format!("the round trip loses data: {lost}")),
            None => Ok(()),
        }
    }
}
