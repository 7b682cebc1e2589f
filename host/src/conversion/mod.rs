//! The CRD conversion webhook for the parent kind, backed by the guest's `convert` export.
//!
//! The data flow: at start, `tls` loads the serving certificate from a mounted Secret, or makes a CA
//! and certificate and keeps them in a Secret (`secret`) shared by every replica; `ca_bundle` puts that
//! CA into the CRD's `spec.conversion.webhook.clientConfig.caBundle` and keeps it there; `server`
//! serves `POST /convert` over TLS; `reload` reads the certificate again every minute and serves a
//! renewed one (its CA going to `ca_bundle`). For each ConversionReview the API server sends, `review` calls the
//! converter once per object and checks each answer (an object, in the desired apiVersion, with the
//! same kind, name, namespace, uid, labels, ownerReferences, finalizers and annotations but the CRD
//! group's): one failure fails the whole review with a message naming the object and the field, which
//! the API server passes on to the client that read the object. `server` runs at most as many reviews
//! at once as it has guest instances for, and answers a retryable "busy" beyond them; `events` tells a
//! failed review on the CRD.
//!
//! `run` serves one CRD on its own port (`start`). `serve` serves every ClusterReconciler's CRD on one
//! shared port (`routes`, `start_route`), each under a certificate of its own chosen by the name the
//! API server asks for, which `client_config` reads from the CRD.
//!
//! The converter is a plain function so that this module knows nothing of wasm: the host wraps the
//! guest's `convert(object, to-api-version) -> result<string, string>` in it.

pub mod ca_bundle;
pub mod client_config;
pub mod converter;
pub mod events;
pub mod reload;
pub mod review;
pub mod routes;
pub mod secret;
pub mod server;
pub mod tls;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum_server::tls_rustls::RustlsConfig;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use converter::{Converter, Observer, Outcome};
pub use events::CrdEvents;
pub use reload::{CertSource, Serving};
pub use review::{ConvertFn, ObjectError, answer, crd_group};
pub use routes::{RouteError, RouteGuard, Routes};
pub use secret::SecretRef;
pub use server::Handler;
pub use tls::{Bundle, TlsError};

/// The conversion webhook, as the operator configures it (`run`'s `--conversion-webhook-addr` and
/// the flags beside it).
#[derive(Clone, Debug)]
pub struct WebhookSettings {
    /// Where to serve `POST /convert` over HTTPS (port 0: any free port, logged).
    pub addr: SocketAddr,
    /// The CustomResourceDefinition whose caBundle the host sets, `<plural>.<group>`.
    pub crd: String,
    pub certificate: Certificate,
}

/// Where the serving certificate comes from.
#[derive(Clone, Debug)]
pub enum Certificate {
    /// A directory with `tls.crt`, `tls.key` and optional `ca.crt` (a mounted `kubernetes.io/tls`
    /// Secret); the CA bundle is `ca.crt`, else `tls.crt`.
    Dir(PathBuf),
    /// A CA and serving certificate the host makes for `names` (DNS names or IP addresses) and keeps
    /// in `secret`, shared by every replica and restart.
    Secret {
        secret: SecretRef,
        names: Vec<String>,
    },
}

/// Starts the conversion webhook: loads or makes the certificate, applies the caBundle to the CRD
/// (and keeps it there), and serves at most `slots` reviews at once, reloading the certificate when it
/// changes, until the process ends. Returns the bound address.
pub async fn start(
    settings: &WebhookSettings,
    client: kube::Client,
    converter: Converter,
    observer: Observer,
    slots: usize,
) -> anyhow::Result<SocketAddr> {
    let crd = &settings.crd;
    // The group whose annotations the converter may change: from the CRD's name, which the API server
    // makes `<plural>.<group>`, not from the objects of a review, which anyone reaching the port sends.
    let group = crd_group(crd)
        .ok_or_else(|| anyhow::anyhow!("--conversion-crd {crd} is not <plural>.<group>"))?;
    let source = match &settings.certificate {
        Certificate::Dir(dir) => CertSource::Dir(dir.clone()),
        Certificate::Secret { secret, names } => CertSource::Secret {
            client: client.clone(),
            secret: secret.clone(),
            names: names.clone(),
        },
    };
    let make_tls = |bundle: &Bundle| -> Result<RustlsConfig, TlsError> {
        Ok(RustlsConfig::from_config(Arc::new(bundle.server_config()?)))
    };
    let (tls, certified) = certify(source, client, crd, make_tls).await?;
    certified.detach();
    let handler = Handler::new(converter, observer, group, slots);
    let bound = server::serve(settings.addr, tls, handler)?;
    tracing::info!(%bound, %crd, "serving the conversion webhook");
    Ok(bound)
}

/// One ClusterReconciler's conversion on `serve`'s shared port (`routes`): route `route`
/// (`/convert/<route>`) for CRD `crd`, its certificate kept in `secret`.
#[derive(Clone, Debug, PartialEq)]
pub struct RouteSettings {
    pub route: String,
    pub crd: String,
    pub secret: SecretRef,
}

/// A route while it is served: dropping it removes the route and stops following its certificate.
pub struct ServedRoute {
    _certified: Certified,
    _route: RouteGuard,
}

/// Adds `settings`' route to `routes`: reads the CRD's `clientConfig` for the name the API server
/// asks for (and checks its path), makes or loads the route's certificate for that name in the Secret,
/// puts its CA into the CRD's caBundle, all as `client` (the reconciler's ServiceAccount), and answers
/// at most `slots` reviews at once with `converter`.
pub async fn start_route(
    routes: &Arc<Routes>,
    settings: &RouteSettings,
    client: kube::Client,
    converter: Converter,
    observer: Observer,
    slots: usize,
) -> anyhow::Result<ServedRoute> {
    let RouteSettings { route, crd, secret } = settings;
    let group = crd_group(crd).ok_or_else(|| anyhow::anyhow!("{crd} is not <plural>.<group>"))?;
    let api: kube::Api<CustomResourceDefinition> = kube::Api::all(client.clone());
    let definition = api
        .get(crd)
        .await
        .map_err(|e| anyhow::anyhow!("reading CRD {crd}: {e}"))?;
    let names = client_config::served_names(&definition, &format!("/convert/{route}"))
        .map_err(|e| anyhow::anyhow!("CRD {crd}: {e}"))?;
    let handler = Handler::new(converter, observer, group, slots);
    let guard = routes.add(route, names.clone(), handler)?;
    let source = CertSource::Secret {
        client: client.clone(),
        secret: secret.clone(),
        names: names.clone(),
    };
    let serve_route = |bundle: &Bundle| {
        let serving = guard.serving();
        serving.serve(bundle)?;
        Ok(serving)
    };
    let (_, certified) = certify(source, client, crd, serve_route).await?;
    tracing::info!(%route, %crd, ?names, "serving a conversion webhook route");
    Ok(ServedRoute {
        _certified: certified,
        _route: guard,
    })
}

/// The tasks that keep one webhook's certificate current: they end when it is dropped.
pub struct Certified(Vec<JoinHandle<()>>);

impl Certified {
    /// Lets them run until the process ends (`run`'s one webhook).
    pub fn detach(mut self) {
        self.0.clear();
    }
}

impl Drop for Certified {
    fn drop(&mut self) {
        self.0.iter().for_each(JoinHandle::abort);
    }
}

/// Loads the certificate from `source` and serves it where `make` puts it, applies its CA to CRD
/// `crd`'s caBundle as `client` and keeps it there, and follows the certificate's renewals.
async fn certify<S: Serving + Clone>(
    source: CertSource,
    client: kube::Client,
    crd: &str,
    make: impl FnOnce(&Bundle) -> Result<S, TlsError>,
) -> anyhow::Result<(S, Certified)> {
    let bundle = source.load().await?;
    let serving = make(&bundle)?;
    ca_bundle::ensure(client.clone(), crd, &bundle.ca_pem).await?;
    let (ca, ca_changes) = watch::channel(bundle.ca_pem.clone());
    let keep = tokio::spawn(ca_bundle::keep(client, crd.to_string(), ca_changes));
    let reload = reload::follow(source, bundle, serving.clone(), ca, reload::REFRESH);
    Ok((serving, Certified(vec![keep, tokio::spawn(reload)])))
}
