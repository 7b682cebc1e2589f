//! The self-made certificate's home: a `kubernetes.io/tls` Secret (`tls.crt`, `tls.key`, `ca.crt`) that
//! every replica reads at start, so they all serve under the CA in the CRD's caBundle. The first
//! replica to find it missing, expiring or not covering the names makes a new one; when replicas race,
//! the loser of the create (409) or replace (409) reads the winner's.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::time::SystemTime;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};

use super::tls::{Bundle, TlsError, VALIDITY};

/// A Secret by `NAMESPACE/NAME`.
#[derive(Clone, Debug, PartialEq)]
pub struct SecretRef {
    pub namespace: String,
    pub name: String,
}

impl std::fmt::Display for SecretRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

impl FromStr for SecretRef {
    type Err = String;

    fn from_str(s: &str) -> Result<SecretRef, String> {
        match s.split_once('/') {
            Some((namespace, name))
                if !namespace.is_empty() && !name.is_empty() && !name.contains('/') =>
            {
                Ok(SecretRef {
                    namespace: namespace.to_string(),
                    name: name.to_string(),
                })
            }
            _ => Err(format!("`{s}` is not NAMESPACE/NAME")),
        }
    }
}

/// The bundle kept in `secret`, made (or remade) first if it is missing, unreadable, expiring within
/// `RENEW_BEFORE`, or does not cover `names`.
pub async fn from_secret(
    client: kube::Client,
    secret: &SecretRef,
    names: &[String],
) -> Result<Bundle, TlsError> {
    let api: Api<Secret> = Api::namespaced(client, &secret.namespace);
    let api_error = |source| TlsError::Api {
        secret: secret.to_string(),
        source,
    };
    let existing = api.get_opt(&secret.name).await.map_err(api_error)?;
    if let Some(existing) = &existing {
        match reusable(existing, names, SystemTime::now()) {
            Ok(bundle) => {
                // Read again every `reload::REFRESH`: not worth a line at info.
                tracing::debug!(%secret, "the webhook certificate kept in the Secret is good");
                return Ok(bundle);
            }
            Err(why) => tracing::info!(%secret, %why, "making a new webhook certificate"),
        }
    }
    let fresh = renewed(names, existing.as_ref())?;
    let mut object = to_secret(&fresh, secret);
    let written = match &existing {
        None => api.create(&PostParams::default(), &object).await,
        Some(old) => {
            // Replace only the version we judged: a replica that renewed it meanwhile wins.
            object.metadata.resource_version = old.metadata.resource_version.clone();
            api.replace(&secret.name, &PostParams::default(), &object)
                .await
        }
    };
    match written {
        Ok(_) => {
            tracing::info!(%secret, names = ?names, "stored a new webhook CA and certificate");
            Ok(fresh)
        }
        Err(kube::Error::Api(status)) if status.is_already_exists() || status.is_conflict() => {
            tracing::info!(%secret, "another replica stored the certificate first; using theirs");
            let theirs = api.get(&secret.name).await.map_err(api_error)?;
            reusable(&theirs, names, SystemTime::now()).map_err(|message| TlsError::Unusable {
                secret: secret.to_string(),
                message,
            })
        }
        Err(e) => Err(api_error(e)),
    }
}

/// A new bundle for `names`. Its CA bundle also trusts the CA of `previous` (the Secret it replaces):
/// replicas that have not reloaded yet serve the old certificate for up to a `reload::REFRESH`, and
/// the API server, which now trusts the new caBundle, must still accept them.
pub fn renewed(names: &[String], previous: Option<&Secret>) -> Result<Bundle, TlsError> {
    let mut fresh = Bundle::generate(names, VALIDITY)?;
    let previous_ca = previous
        .and_then(|secret| secret.data.as_ref()?.get("ca.crt"))
        .and_then(|ca| first_certificate(&String::from_utf8_lossy(&ca.0)));
    if let Some(ca) = previous_ca {
        fresh.ca_pem.push_str(&ca);
    }
    Ok(fresh)
}

/// The first PEM certificate block in `pem` (a CA bundle starts with its newest CA).
fn first_certificate(pem: &str) -> Option<String> {
    const END: &str = "-----END CERTIFICATE-----";
    let start = pem.find("-----BEGIN CERTIFICATE-----")?;
    let end = start + pem[start..].find(END)? + END.len();
    Some(format!("{}\n", &pem[start..end]))
}

/// The bundle in `secret` if it can be served at `now` for `names`; why not otherwise.
pub fn reusable(secret: &Secret, names: &[String], now: SystemTime) -> Result<Bundle, String> {
    let data = secret.data.as_ref();
    let field = |key: &str| {
        let bytes = data
            .and_then(|data| data.get(key))
            .ok_or_else(|| format!("no {key}"))?;
        String::from_utf8(bytes.0.clone()).map_err(|_| format!("{key} is not PEM text"))
    };
    let bundle = Bundle {
        cert_pem: field("tls.crt")?,
        key_pem: field("tls.key")?,
        ca_pem: field("ca.crt")?,
    };
    bundle.still_good(names, now)?;
    Ok(bundle)
}

/// `bundle` as the `kubernetes.io/tls` Secret `secret`.
pub fn to_secret(bundle: &Bundle, secret: &SecretRef) -> Secret {
    let entry = |key: &str, pem: &str| (key.to_string(), ByteString(pem.as_bytes().to_vec()));
    Secret {
        metadata: ObjectMeta {
            name: Some(secret.name.clone()),
            namespace: Some(secret.namespace.clone()),
            labels: Some(BTreeMap::from([(
                crate::controller::MANAGED_BY_LABEL.to_string(),
                crate::controller::MANAGER.to_string(),
            )])),
            ..ObjectMeta::default()
        },
        type_: Some("kubernetes.io/tls".into()),
        data: Some(BTreeMap::from([
            entry("tls.crt", &bundle.cert_pem),
            entry("tls.key", &bundle.key_pem),
            entry("ca.crt", &bundle.ca_pem),
        ])),
        ..Secret::default()
    }
}
