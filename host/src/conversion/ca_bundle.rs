//! The CA into the CRD: the API server verifies the webhook with
//! `spec.conversion.webhook.clientConfig.caBundle`, which only the host knows when it makes its own CA.
//! The host server-side applies that one field (and nothing else of the operator's CRD: strategy,
//! service or url and conversionReviewVersions stay theirs), and watches the CRD to put it back when
//! someone else changes it, e.g. a re-applied manifest with an old or empty caBundle.

use futures::StreamExt;
use k8s_openapi::ByteString;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use tokio::sync::watch;

use super::tls::certificates;
use crate::controller::MANAGER;

/// The least time between two applies of the caBundle by one replica.
const REAPPLY_PAUSE: std::time::Duration = std::time::Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum CaBundleError {
    #[error("CustomResourceDefinition {0} not found (install it before the host)")]
    NotFound(String),
    #[error("CustomResourceDefinition {crd}: {source}")]
    Api { crd: String, source: kube::Error },
}

/// What the CRD needs, given the CA the webhook serves under.
#[derive(Debug, PartialEq)]
pub enum Needed {
    /// Its caBundle is some other value (or none): apply ours.
    Apply,
    /// Its caBundle is ours already.
    Nothing,
    /// It has no `strategy: Webhook`: the API server will not call the webhook, and a caBundle
    /// without a webhook stanza would be refused; the operator's manifest must declare the webhook.
    NoWebhook,
}

/// What `crd` needs for the API server to trust `ca_pem`.
pub fn needed(crd: &CustomResourceDefinition, ca_pem: &str) -> Needed {
    let Some(conversion) = crd.spec.conversion.as_ref() else {
        return Needed::NoWebhook;
    };
    if conversion.strategy != "Webhook" {
        return Needed::NoWebhook;
    }
    let current = conversion
        .webhook
        .as_ref()
        .and_then(|webhook| webhook.client_config.as_ref())
        .and_then(|config| config.ca_bundle.as_ref());
    match current {
        Some(bundle) if trusts_all(&bundle.0, ca_pem) => Needed::Nothing,
        _ => Needed::Apply,
    }
}

/// Whether `bundle` holds every CA of `ca_pem`. Not plain equality: during a renewal the replica
/// that renewed applies the new CA plus the previous one, and a replica that has not reloaded yet,
/// whose bundle is only the previous CA, must not put its shorter bundle back.
fn trusts_all(bundle: &[u8], ca_pem: &str) -> bool {
    let bundle = String::from_utf8_lossy(bundle);
    match (
        certificates("caBundle", &bundle),
        certificates("ca", ca_pem),
    ) {
        (Ok(trusted), Ok(ours)) => ours.iter().all(|ca| trusted.contains(ca)),
        _ => false,
    }
}

/// The apply configuration that sets only the caBundle.
pub fn apply_configuration(crd: &str, ca_pem: &str) -> serde_json::Value {
    let ca_bundle = serde_json::to_value(ByteString(ca_pem.as_bytes().to_vec()))
        .expect("bytes serialize as base64");
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": crd},
        "spec": {"conversion": {"webhook": {"clientConfig": {"caBundle": ca_bundle}}}},
    })
}

/// Puts `ca_pem` into the caBundle of CRD `name` if it is not there; fails if the CRD does not exist.
pub async fn ensure(
    client: kube::Client,
    name: &str,
    ca_pem: &str,
) -> Result<Needed, CaBundleError> {
    let api: Api<CustomResourceDefinition> = Api::all(client);
    let error = |source| CaBundleError::Api {
        crd: name.to_string(),
        source,
    };
    let crd = api
        .get_opt(name)
        .await
        .map_err(error)?
        .ok_or_else(|| CaBundleError::NotFound(name.to_string()))?;
    let need = needed(&crd, ca_pem);
    act(&api, name, ca_pem, &need).await.map_err(error)?;
    Ok(need)
}

/// Follows CRD `name` until the process ends, re-applying the CA in `ca` whenever the CRD stops
/// carrying it or the CA changes (a renewed certificate).
pub async fn keep(client: kube::Client, name: String, mut ca: watch::Receiver<String>) {
    let api: Api<CustomResourceDefinition> = Api::all(client);
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut crds = watcher(api.clone(), config)
        .default_backoff()
        .applied_objects()
        .boxed();
    let mut ca_open = true;
    loop {
        let crd = tokio::select! {
            crd = crds.next() => match crd {
                Some(Ok(crd)) => crd,
                Some(Err(e)) => {
                    tracing::warn!(crd = %name, error = %e, "watching the CRD for its caBundle");
                    continue;
                }
                None => return,
            },
            changed = ca.changed(), if ca_open => {
                ca_open = changed.is_ok();
                match api.get(&name).await {
                    Ok(crd) => crd,
                    Err(e) => {
                        tracing::warn!(crd = %name, error = %e, "reading the CRD for the new caBundle");
                        continue;
                    }
                }
            }
        };
        let ca_pem = ca.borrow_and_update().clone();
        let need = needed(&crd, &ca_pem);
        if let Err(e) = act(&api, &name, &ca_pem, &need).await {
            tracing::warn!(crd = %name, error = %e, "could not re-apply the caBundle");
        }
        if need == Needed::Apply {
            // If another writer keeps putting a different caBundle back, patch at this pace at most.
            tokio::time::sleep(REAPPLY_PAUSE).await;
        }
    }
}

async fn act(
    api: &Api<CustomResourceDefinition>,
    name: &str,
    ca_pem: &str,
    need: &Needed,
) -> Result<(), kube::Error> {
    match need {
        Needed::Apply => {
            let params = PatchParams::apply(MANAGER).force();
            let patch = Patch::Apply(apply_configuration(name, ca_pem));
            api.patch(name, &params, &patch).await?;
            tracing::info!(crd = name, "applied the conversion webhook's caBundle");
        }
        Needed::Nothing => {}
        Needed::NoWebhook => tracing::warn!(
            crd = name,
            "the CRD has no `conversion: {{strategy: Webhook}}`: the API server will not call the \
             conversion webhook; the caBundle is applied once the CRD declares the webhook"
        ),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversion::tls::{Bundle, VALIDITY};

    fn crd(conversion: serde_json::Value) -> CustomResourceDefinition {
        serde_json::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [],
                "conversion": conversion,
            },
        }))
        .unwrap()
    }

    fn webhook(ca_bundle: Option<&str>) -> serde_json::Value {
        let mut client_config = json!({"url": "https://127.0.0.1:9443/convert"});
        if let Some(ca) = ca_bundle {
            client_config["caBundle"] = serde_json::to_value(ByteString(ca.into())).unwrap();
        }
        json!({"strategy": "Webhook", "webhook": {
            "conversionReviewVersions": ["v1"], "clientConfig": client_config,
        }})
    }

    #[test]
    fn the_ca_bundle_is_applied_when_missing_or_different_only() {
        let names = ["localhost".to_string()];
        let ca = Bundle::generate(&names, VALIDITY).unwrap().ca_pem;
        let other = Bundle::generate(&names, VALIDITY).unwrap().ca_pem;
        assert_eq!(needed(&crd(webhook(None)), &ca), Needed::Apply);
        assert_eq!(needed(&crd(webhook(Some(&other))), &ca), Needed::Apply);
        assert_eq!(needed(&crd(webhook(Some(&ca))), &ca), Needed::Nothing);
    }

    #[test]
    fn a_bundle_that_already_trusts_our_cas_is_left_alone() {
        let pem = |bundle: &Bundle| bundle.ca_pem.clone();
        let names = ["localhost".to_string()];
        let (old, new) = (
            Bundle::generate(&names, VALIDITY).unwrap(),
            Bundle::generate(&names, VALIDITY).unwrap(),
        );
        let renewed = pem(&new) + &pem(&old);
        // A replica not yet reloaded (old CA only) leaves the renewed bundle be...
        assert_eq!(
            needed(&crd(webhook(Some(&renewed))), &pem(&old)),
            Needed::Nothing
        );
        // ...while the renewing one replaces the old bundle, and garbage is replaced too.
        assert_eq!(
            needed(&crd(webhook(Some(&pem(&old)))), &renewed),
            Needed::Apply
        );
        assert_eq!(
            needed(&crd(webhook(Some("not PEM"))), &pem(&old)),
            Needed::Apply
        );
    }

    #[test]
    fn a_crd_without_a_webhook_gets_nothing() {
        assert_eq!(needed(&crd(json!(null)), "CA"), Needed::NoWebhook);
        assert_eq!(
            needed(&crd(json!({"strategy": "None"})), "CA"),
            Needed::NoWebhook
        );
    }

    #[test]
    fn the_apply_configuration_holds_only_the_base64_ca_bundle() {
        let applied = apply_configuration("widgets.example.com", "CA");
        assert_eq!(
            applied["spec"],
            json!({"conversion": {"webhook": {"clientConfig": {"caBundle": "Q0E="}}}})
        );
        assert_eq!(applied["metadata"], json!({"name": "widgets.example.com"}));
    }
}
