//! An `oci://` reference, parsed: a registry must be named (no silent Docker Hub).

use std::str::FromStr;

use oci_client::Reference;

use super::error::OciError;
use super::format::SCHEME;

/// A parsed `oci://` reference.
#[derive(Clone, Debug, PartialEq)]
pub struct OciReference(pub Reference);

impl OciReference {
    /// A digest reference names one immutable module; a tag may move.
    pub fn is_digest(&self) -> bool {
        self.0.digest().is_some()
    }
}

impl FromStr for OciReference {
    type Err = OciError;

    fn from_str(s: &str) -> Result<OciReference, OciError> {
        let rest = s.strip_prefix(SCHEME).unwrap_or(s);
        // A reference without a registry would silently mean Docker Hub: refuse the ambiguity.
        let registry = rest.split('/').next().unwrap_or_default();
        if !rest.contains('/')
            || !(registry.contains('.') || registry.contains(':') || registry == "localhost")
        {
            return Err(OciError::Reference(
                s.into(),
                "name the registry host, e.g. oci://registry.example.com/team/module:v1".into(),
            ));
        }
        Reference::from_str(rest)
            .map(OciReference)
            .map_err(|e| OciError::Reference(s.into(), e.to_string()))
    }
}

impl std::fmt::Display for OciReference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{SCHEME}{}", self.0.whole())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_parse_with_a_registry_only() {
        let tag: OciReference = "oci://registry.example.com:5000/team/myapp:v1"
            .parse()
            .unwrap();
        assert_eq!(tag.0.registry(), "registry.example.com:5000");
        assert_eq!(tag.0.repository(), "team/myapp");
        assert_eq!(tag.0.tag(), Some("v1"));
        assert!(!tag.is_digest());
        assert_eq!(
            tag.to_string(),
            "oci://registry.example.com:5000/team/myapp:v1"
        );
        let digest = format!("oci://127.0.0.1:5000/myapp@sha256:{}", "a".repeat(64));
        let digest: OciReference = digest.parse().unwrap();
        assert!(digest.is_digest());
        for bad in [
            "oci://myapp:v1",
            "oci://team/myapp:v1",
            "oci://x.io/My App:v1",
        ] {
            assert!(bad.parse::<OciReference>().is_err(), "{bad}");
        }
    }
}
