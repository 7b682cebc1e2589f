//! The conversion webhook on the real control plane, in-process with a Rust converter: the API server
//! calls it for a test CRD whose v1 is stored and v2 served, trusting the self-made CA that the host
//! keeps in a Secret and puts into the CRD's caBundle. The host runs as a ServiceAccount with only the
//! RBAC the webhook needs (`webhook_rules`), so that list is tested too.

use std::sync::Arc;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject, PostParams};
use reconcile_host::conversion::{
    self, Bundle, Certificate, Converter, Outcome, SecretRef, WebhookSettings,
};
use serde_json::{Value, json};
use testcluster::{TestCluster, failure_guard};

use crate::common::conversion::*;
use crate::common::myapp::wait_for;

/// `spec.size` at v1 is `spec.count` at v2; a size of 13 has no conversion.
fn widget_converter() -> Converter {
    Arc::new(|object: &Value, to: &str| {
        let mut object = object.clone();
        let spec = object["spec"].as_object_mut().ok_or("no spec")?;
        let (from, into) = match to.strip_prefix(&format!("{GROUP}/")) {
            Some("v1") => ("count", "size"),
            Some("v2") => ("size", "count"),
            _ => return Err(format!("no version {to}")),
        };
        if let Some(value) = spec.remove(from) {
            if value == 13 {
                return Err("unlucky size 13 has no other version".into());
            }
            spec.insert(into.to_string(), value);
        }
        object["apiVersion"] = json!(to);
        Ok(object)
    })
}

fn settings(crd: &str, secret: &SecretRef) -> WebhookSettings {
    WebhookSettings {
        addr: "127.0.0.1:0".parse().unwrap(),
        crd: crd.to_string(),
        certificate: Certificate::Secret {
            secret: secret.clone(),
            names: vec!["localhost".into(), "127.0.0.1".into()],
        },
    }
}

async fn secret_ca(client: &kube::Client, secret: &SecretRef) -> Vec<u8> {
    let secret = Api::<Secret>::namespaced(client.clone(), &secret.namespace)
        .get(&secret.name)
        .await
        .unwrap();
    assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    secret.data.unwrap()["ca.crt"].0.clone()
}

/// One test's namespace, its CRD's name, the certificate Secret, and a client with only the webhook's
/// RBAC beside the admin's.
struct Setup {
    admin: kube::Client,
    namespace: String,
    crd: String,
    secret: SecretRef,
    client: kube::Client,
}

impl Setup {
    /// The test CRD `plural` (kind `kind`) without a webhook yet, and the rest.
    async fn new(cluster: &TestCluster, plural: &str, kind: &str) -> Setup {
        let admin = cluster.client().await.unwrap();
        apply_crd(&admin, plural, kind, json!({"strategy": "None"})).await;
        let namespace = cluster.namespace(plural).await.unwrap();
        let crd = format!("{plural}.{GROUP}");
        let secret = SecretRef {
            namespace: namespace.clone(),
            name: format!("{plural}-webhook-cert"),
        };
        let client = webhook_client(cluster, &admin, &namespace, &crd, &secret.name).await;
        Setup {
            admin,
            namespace,
            crd,
            secret,
            client,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn widgets_are_read_at_either_version_through_the_webhook() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    let Setup {
        admin,
        namespace,
        crd,
        secret,
        client,
    } = Setup::new(cluster, "widgets", "Widget").await;
    // The host starts before the CRD declares the webhook: it applies nothing, then follows the CRD.
    let addr = conversion::start(
        &settings(&crd, &secret),
        client.clone(),
        widget_converter(),
        Arc::new(|_: &Outcome| {}),
        8,
    )
    .await
    .unwrap();
    let webhook = json!({"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v1"],
        "clientConfig": {"url": format!("https://127.0.0.1:{}/convert", addr.port())},
    }});
    apply_crd(&admin, "widgets", "Widget", webhook.clone()).await;
    let ca = secret_ca(&admin, &secret).await;
    let ca_bundle = || async {
        let crd = crds(&admin).get(&crd).await.ok()?;
        crd.spec
            .conversion?
            .webhook?
            .client_config?
            .ca_bundle
            .map(|b| b.0)
    };
    wait_for("the caBundle in the CRD", || async {
        (ca_bundle().await? == ca).then_some(())
    })
    .await;

    // Stored at v1, read at v2 (once the API server uses the webhook), and back.
    let v1 = widgets(&admin, &namespace, "v1");
    let v2 = widgets(&admin, &namespace, "v2");
    let widget = |version: &str, name: &str, spec: Value| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": format!("{GROUP}/{version}"), "kind": "Widget",
            "metadata": {"name": name}, "spec": spec,
        }))
        .unwrap()
    };
    v1.create(
        &PostParams::default(),
        &widget("v1", "small", json!({"size": 3})),
    )
    .await
    .unwrap();
    let read = wait_for("small read at v2 converted", || async {
        let object = v2.get("small").await.ok()?;
        object.data["spec"].get("count").is_some().then_some(object)
    })
    .await;
    assert_eq!(read.types.unwrap().api_version, format!("{GROUP}/v2"));
    assert_eq!(read.data["spec"], json!({"count": 3}));
    assert_eq!(
        v1.get("small").await.unwrap().data["spec"],
        json!({"size": 3})
    );
    v2.create(
        &PostParams::default(),
        &widget("v2", "large", json!({"count": 40})),
    )
    .await
    .unwrap();
    assert_eq!(
        v1.get("large").await.unwrap().data["spec"],
        json!({"size": 40})
    );
    assert_eq!(
        v2.get("large").await.unwrap().data["spec"],
        json!({"count": 40})
    );

    // A converter error reaches the client that read at v2; the storage version still reads.
    v1.create(
        &PostParams::default(),
        &widget("v1", "unlucky", json!({"size": 13})),
    )
    .await
    .unwrap();
    let error = v2.get("unlucky").await.unwrap_err();
    let kube::Error::Api(status) = error else {
        panic!("not an API error: {error}")
    };
    assert!(
        status.message.contains(&format!("converting Widget {namespace}/unlucky to {GROUP}/v2: unlucky size 13 has no other version")),
        "{status:?}"
    );
    assert_eq!(
        v1.get("unlucky").await.unwrap().data["spec"],
        json!({"size": 13})
    );
    v1.delete("unlucky", &Default::default()).await.unwrap();

    // A restart (or another replica) serves under the same CA, and the caBundle stays.
    let again = conversion::start(
        &settings(&crd, &secret),
        client,
        widget_converter(),
        Arc::new(|_: &Outcome| {}),
        8,
    )
    .await
    .unwrap();
    assert_ne!(again, addr);
    assert_eq!(secret_ca(&admin, &secret).await, ca);
    assert_eq!(ca_bundle().await.unwrap(), ca);

    // Someone re-applies the manifest with a stale caBundle: the host puts its own back.
    let mut stale = webhook;
    let other = Bundle::generate(&["localhost".into()], conversion::tls::VALIDITY).unwrap();
    stale["webhook"]["clientConfig"]["caBundle"] =
        serde_json::to_value(ByteString(other.ca_pem.into_bytes())).unwrap();
    apply_crd(&admin, "widgets", "Widget", stale).await;
    wait_for("the caBundle put back", || async {
        (ca_bundle().await? == ca).then_some(())
    })
    .await;
    wait_for("small read at v2 again", || async {
        v2.get("small").await.ok()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expiring_certificate_in_the_secret_is_replaced() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    let Setup {
        admin,
        namespace,
        crd,
        secret,
        client,
    } = Setup::new(cluster, "gadgets", "Gadget").await;
    // Without a webhook stanza the CRD gets nothing; the certificate is still made.

    let names = ["localhost".to_string(), "127.0.0.1".to_string()];
    let expiring = Bundle::generate(&names, std::time::Duration::from_secs(10 * 86_400)).unwrap();
    Api::<Secret>::namespaced(admin.clone(), &namespace)
        .create(
            &PostParams::default(),
            &conversion::secret::to_secret(&expiring, &secret),
        )
        .await
        .unwrap();
    conversion::start(
        &settings(&crd, &secret),
        client,
        widget_converter(),
        Arc::new(|_: &Outcome| {}),
        8,
    )
    .await
    .unwrap();
    let ca = secret_ca(&admin, &secret).await;
    assert_ne!(ca, expiring.ca_pem.as_bytes());
    // The new CA bundle still trusts the old CA, for replicas that have not reloaded yet.
    assert!(ca.ends_with(expiring.ca_pem.as_bytes()));
    let kept = Api::<Secret>::namespaced(admin.clone(), &namespace)
        .get(&secret.name)
        .await
        .unwrap();
    let bundle = conversion::secret::reusable(&kept, &names, std::time::SystemTime::now()).unwrap();
    assert_eq!(bundle.ca_pem.as_bytes(), ca);
    let crd = crds(&admin).get(&crd).await.unwrap();
    assert_eq!(crd.spec.conversion.unwrap().strategy, "None");
}
