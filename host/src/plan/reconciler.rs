//! `plan --reconciler NS/NAME` / `--cluster-reconciler NAME`: plan as a platform reconciler runs.
//!
//! A plan run as the caller (often a cluster admin) shows what the module would do with the caller's
//! rights, which a reconciler of `serve` does not have: it acts as its ServiceAccount only. So a plan of
//! a reconciler takes everything but the candidate module from its object (parent kind, children,
//! related kinds, selection, limits: the platform's own `Definition`), and makes every read and dry-run
//! through the client `serve` would give it (`platform::impersonating`). A verb the ServiceAccount
//! lacks then fails the plan, or the parent it concerns, as it would fail the reconciler.

use std::sync::Arc;

use kube::Client;
use kube::api::Api;

use crate::controller::Settings;
use crate::guest::Runtime;
use crate::platform::impersonating;
use crate::platform::spec::{Definition, Key, NamespacedName, SpecError};

/// What a plan runs as: a reconciler object's settings, limits and ServiceAccount.
pub struct Planned {
    pub settings: Settings,
    pub runtime: Arc<Runtime>,
    /// Makes every call as the reconciler's ServiceAccount.
    pub client: Client,
    /// `system:serviceaccount:<namespace>:<name>`.
    pub user: String,
}

/// Why a plan cannot take a reconciler's place.
#[derive(Debug, thiserror::Error)]
pub enum ReconcilerError {
    #[error("reading {kind} {key}: {source}")]
    Read {
        kind: &'static str,
        key: Key,
        source: kube::Error,
    },
    #[error("{kind} {key} is not valid (InvalidSpec), as serve would report: {source}")]
    Invalid {
        kind: &'static str,
        key: Key,
        source: SpecError,
    },
    #[error("{kind} {key}: spec.limits: {reason}")]
    Limits {
        kind: &'static str,
        key: Key,
        reason: String,
    },
    #[error("a client impersonating {user}: {source}")]
    Impersonate { user: String, source: kube::Error },
}

/// Parses `--reconciler NAMESPACE/NAME`.
pub fn parse_namespaced(text: &str) -> Result<NamespacedName, String> {
    match text.split_once('/') {
        Some((namespace, name))
            if !namespace.is_empty() && !name.is_empty() && !name.contains('/') =>
        {
            Ok(NamespacedName {
                namespace: namespace.into(),
                name: name.into(),
            })
        }
        _ => Err(format!("`{text}` is not NAMESPACE/NAME")),
    }
}

/// Reads the reconciler object `key` with the caller's `client` and plans as it: its definition, its
/// limits on top of `host`'s (which bound them, as the host's flags bound `serve`'s), and a client
/// impersonating its ServiceAccount on `config`'s connection. `adopt_orphans` is the host's policy.
pub async fn plan_as(
    client: &Client,
    config: &kube::Config,
    key: Key,
    host: &Arc<Runtime>,
    adopt_orphans: bool,
) -> Result<Planned, ReconcilerError> {
    let scope = key.scope();
    let kind = scope.kind();
    let api: Api<kube::core::DynamicObject> = match &key.namespace {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &scope.resource()),
        None => Api::all_with(client.clone(), &scope.resource()),
    };
    let object = api
        .get(&key.name)
        .await
        .map_err(|source| ReconcilerError::Read {
            kind,
            key: key.clone(),
            source,
        })?;
    let definition = Definition::read(&object).map_err(|source| ReconcilerError::Invalid {
        kind,
        key: key.clone(),
        source,
    })?;
    let limits = |reason: String| ReconcilerError::Limits {
        kind,
        key: key.clone(),
        reason,
    };
    let runtime = host
        .with_limits(definition.runtime_config(host.config()))
        .map_err(|e| limits(format!("{e:#}")))?;
    let user = definition.user.clone();
    let client =
        impersonating(config, &user, None).map_err(|source| ReconcilerError::Impersonate {
            user: user.clone(),
            source,
        })?;
    Ok(Planned {
        settings: Settings {
            adopt_orphans,
            ..definition.settings
        },
        runtime,
        client,
        user,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reconciler_is_named_namespace_slash_name() {
        let parsed = parse_namespaced("team-a/myapp").unwrap();
        assert_eq!(
            (parsed.namespace.as_str(), parsed.name.as_str()),
            ("team-a", "myapp")
        );
        for bad in ["myapp", "/myapp", "team-a/", "a/b/c"] {
            assert!(parse_namespaced(bad).is_err(), "{bad}");
        }
    }
}
