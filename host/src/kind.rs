//! Group/version/kind as given on the command line (`apps/v1/Deployment`, `v1/ConfigMap` for the core
//! group): the parent to watch and the child kinds a guest may produce.

use std::fmt;
use std::str::FromStr;

/// A resource kind named by group, version and kind.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Gvk {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl Gvk {
    /// The `apiVersion` field of an object of this kind.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Whether an object's `apiVersion` and `kind` name this kind.
    pub fn matches(&self, api_version: &str, kind: &str) -> bool {
        kind == self.kind
            && match api_version.split_once('/') {
                Some((group, version)) => group == self.group && version == self.version,
                None => self.group.is_empty() && api_version == self.version,
            }
    }
}

impl fmt::Display for Gvk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.api_version(), self.kind)
    }
}

#[derive(Debug, thiserror::Error)]
#[error(
    "`{0}` is not GROUP/VERSION/KIND (or VERSION/KIND for the core group), e.g. apps/v1/Deployment"
)]
pub struct ParseGvkError(String);

impl FromStr for Gvk {
    type Err = ParseGvkError;

    fn from_str(s: &str) -> Result<Gvk, ParseGvkError> {
        let parts: Vec<&str> = s.split('/').collect();
        let (group, version, kind) = match parts.as_slice() {
            [group, version, kind] => (*group, *version, *kind),
            [version, kind] => ("", *version, *kind),
            _ => return Err(ParseGvkError(s.to_string())),
        };
        if version.is_empty()
            || kind.is_empty()
            || !kind.starts_with(|c: char| c.is_ascii_uppercase())
        {
            return Err(ParseGvkError(s.to_string()));
        }
        Ok(Gvk {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_grouped_and_core_kinds() {
        let deploy: Gvk = "apps/v1/Deployment".parse().unwrap();
        assert_eq!(deploy.api_version(), "apps/v1");
        assert!(deploy.matches("apps/v1", "Deployment"));
        assert!(!deploy.matches("apps/v1beta1", "Deployment"));
        let cm: Gvk = "v1/ConfigMap".parse().unwrap();
        assert_eq!(cm.api_version(), "v1");
        assert!(cm.matches("v1", "ConfigMap"));
        assert!(!cm.matches("apps/v1", "ConfigMap"));
    }

    #[test]
    fn refuses_malformed_kinds() {
        for bad in [
            "Deployment",
            "apps/v1/deployment",
            "a/b/c/D",
            "apps//Deployment",
        ] {
            assert!(bad.parse::<Gvk>().is_err(), "{bad} should not parse");
        }
    }
}
