//! What a CRD's `spec.conversion.webhook.clientConfig` tells `serve`: the name the API server will ask
//! for in the TLS handshake (which picks the route's certificate), and whether it calls the route's
//! path. Read from the CRD rather than configured twice, so the two cannot disagree.

use axum::http::Uri;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// The names a route's certificate must cover for the API server to reach it at `path` as the CRD
/// says: a Service's `<name>.<namespace>.svc` (and `.svc.cluster.local`), or a URL's host. Refused,
/// with what to change, when the CRD converts without a webhook, calls another path, or names an IP
/// address (the route's certificate is chosen by name; an address names no route).
pub fn served_names(crd: &CustomResourceDefinition, path: &str) -> Result<Vec<String>, String> {
    let conversion = crd.spec.conversion.as_ref();
    let webhook = conversion
        .filter(|c| c.strategy == "Webhook")
        .and_then(|c| c.webhook.as_ref())
        .and_then(|w| w.client_config.as_ref())
        .ok_or("spec.conversion is not {strategy: Webhook, webhook: {clientConfig: ...}}")?;
    let wrong_path = |called: &str| {
        Err(format!(
            "the conversion webhook's clientConfig calls path {called:?}; this reconciler's is {path}"
        ))
    };
    if let Some(service) = &webhook.service {
        let called = service.path.as_deref().unwrap_or("/");
        if called != path {
            return wrong_path(called);
        }
        let host = format!("{}.{}.svc", service.name, service.namespace);
        return Ok(vec![host.clone(), format!("{host}.cluster.local")]);
    }
    let url = webhook
        .url
        .as_deref()
        .ok_or("the conversion webhook's clientConfig has neither service nor url")?;
    let uri: Uri = url
        .parse()
        .map_err(|e| format!("the conversion webhook's url {url:?}: {e}"))?;
    if uri.path() != path {
        return wrong_path(uri.path());
    }
    let host = uri.host().unwrap_or_default();
    if host.is_empty()
        || host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok()
    {
        return Err(format!(
            "the conversion webhook's url {url:?} names no host name: the platform picks each \
             reconciler's certificate by the name the API server asks for (use a Service or a DNS name)"
        ));
    }
    Ok(vec![host.to_string()])
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn crd(conversion: Value) -> CustomResourceDefinition {
        serde_json::from_value(json!({
            "metadata": {"name": "gadgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "gadgets", "kind": "Gadget"}, "versions": [],
                     "conversion": conversion},
        }))
        .unwrap()
    }

    fn webhook(client_config: Value) -> CustomResourceDefinition {
        crd(json!({"strategy": "Webhook", "webhook": {
            "conversionReviewVersions": ["v1"], "clientConfig": client_config}}))
    }

    #[test]
    fn a_service_is_asked_for_by_its_cluster_names() {
        let crd = webhook(json!({"service": {"name": "gadgets-conversion",
            "namespace": "reconcile-host-system", "path": "/convert/gadgets"}}));
        assert_eq!(
            served_names(&crd, "/convert/gadgets").unwrap(),
            [
                "gadgets-conversion.reconcile-host-system.svc",
                "gadgets-conversion.reconcile-host-system.svc.cluster.local"
            ]
        );
    }

    #[test]
    fn a_url_is_asked_for_by_its_host() {
        let crd = webhook(json!({"url": "https://localhost:9443/convert/gadgets"}));
        assert_eq!(
            served_names(&crd, "/convert/gadgets").unwrap(),
            ["localhost"]
        );
    }

    #[test]
    fn another_path_an_address_or_no_webhook_is_refused_saying_why() {
        let other = webhook(json!({"url": "https://localhost:9443/convert"}));
        let error = served_names(&other, "/convert/gadgets").unwrap_err();
        assert!(error.contains("calls path \"/convert\"; this reconciler's is /convert/gadgets"));
        let root = webhook(json!({"service": {"name": "s", "namespace": "n"}}));
        assert!(served_names(&root, "/convert/gadgets").is_err());
        for address in [
            "https://127.0.0.1:9443/convert/gadgets",
            "https://[::1]:9443/convert/gadgets",
        ] {
            let error = served_names(&webhook(json!({"url": address})), "/convert/gadgets");
            assert!(
                error.unwrap_err().contains("names no host name"),
                "{address}"
            );
        }
        let none = crd(json!({"strategy": "None"}));
        assert!(
            served_names(&none, "/convert/gadgets")
                .unwrap_err()
                .contains("strategy: Webhook")
        );
    }
}
