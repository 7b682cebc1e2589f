//! The API server's audit log of writes (see `components::AUDIT_POLICY`): what a test reads to prove
//! which process wrote what, and when.

use anyhow::{Context, Result};
use serde_json::Value;

use crate::TestCluster;

/// One write the API server audited, as its audit event tells it.
#[derive(Clone, Debug)]
pub struct AuditedWrite {
    /// `create`, `update`, `patch`, `delete` or `deletecollection`.
    pub verb: String,
    /// The User-Agent the request came with.
    pub user_agent: String,
    /// The resource, with its subresource if any (`leases`, `myapps/status`).
    pub resource: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    /// The answer's status code.
    pub code: Option<u64>,
    /// When the API server received it (RFC 3339, microseconds).
    pub received: String,
}

impl TestCluster {
    /// Every write the API server audited so far, in the order it answered them.
    pub fn audited_writes(&self) -> Result<Vec<AuditedWrite>> {
        let path = self.dir().join(crate::components::AUDIT_LOG);
        let log = std::fs::read_to_string(&path)
            .with_context(|| format!("reading the audit log {}", path.display()))?;
        Ok(log.lines().filter_map(parse).collect())
    }
}

fn parse(line: &str) -> Option<AuditedWrite> {
    let event: Value = serde_json::from_str(line).ok()?;
    let text = |pointer: &str| {
        event
            .pointer(pointer)
            .and_then(Value::as_str)
            .map(String::from)
    };
    let object = |field: &str| text(&format!("/objectRef/{field}"));
    let resource = match (object("resource"), object("subresource")) {
        (Some(resource), Some(sub)) => format!("{resource}/{sub}"),
        (resource, _) => resource.unwrap_or_default(),
    };
    Some(AuditedWrite {
        verb: text("/verb")?,
        user_agent: text("/userAgent").unwrap_or_default(),
        resource,
        namespace: object("namespace"),
        name: object("name"),
        code: event
            .pointer("/responseStatus/code")
            .and_then(Value::as_u64),
        received: text("/requestReceivedTimestamp").unwrap_or_default(),
    })
}
