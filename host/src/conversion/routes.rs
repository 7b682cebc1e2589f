//! Many CRDs' conversion webhooks on one port (`serve`): each ClusterReconciler with `spec.conversion`
//! is a route, `POST /convert/<route>`, with a certificate of its own (made and kept as its
//! ServiceAccount, trusted by its CRD's caBundle only). The certificate of a handshake is chosen by the
//! name the client asks for (SNI): the API server asks for the host of the CRD's `clientConfig`, the
//! Service `<name>.<namespace>.svc` or the URL's host, so each route needs a name of its own. A name
//! no route covers, or a client that names none, gets no certificate: the handshake fails.
//!
//! A route answers only for its own CRD's group (`review::answer` refuses any other), so a CRD whose
//! path names another team's route is refused, not converted by that team's module.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum_server::tls_rustls::RustlsConfig;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use super::reload::Serving;
use super::server::{Handler, review, serve_app};
use super::tls::{Bundle, TlsError, server_config};

/// Why a route cannot be added.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RouteError {
    #[error(
        "the conversion webhook name {name} is served for {owner} already: give each CRD's webhook a Service (or URL host) of its own"
    )]
    NameTaken { name: String, owner: String },
    #[error("the conversion webhook route {0} is served already")]
    RouteTaken(String),
}

/// One route: who answers, under which names, with which certificate (none until it is loaded).
struct Route {
    handler: Handler,
    names: Vec<String>,
    key: Option<Arc<CertifiedKey>>,
}

/// The routes of the shared port, read by each handshake (certificate) and each request (handler).
#[derive(Default)]
pub struct Routes {
    routes: RwLock<BTreeMap<String, Route>>,
}

impl std::fmt::Debug for Routes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let routes = self.routes.read().expect("routes lock");
        f.debug_list().entries(routes.keys()).finish()
    }
}

impl Routes {
    /// Adds route `name`, answered by `handler` for clients that ask for one of `names`, until the
    /// returned guard is dropped. Its certificate comes later, through the guard's `serving`.
    pub fn add(
        self: &Arc<Self>,
        name: &str,
        names: Vec<String>,
        handler: Handler,
    ) -> Result<RouteGuard, RouteError> {
        let mut routes = self.routes.write().expect("routes lock");
        if routes.contains_key(name) {
            return Err(RouteError::RouteTaken(name.to_string()));
        }
        for (owner, route) in routes.iter() {
            if let Some(taken) = names.iter().find(|n| covers(&route.names, n)) {
                return Err(RouteError::NameTaken {
                    name: taken.clone(),
                    owner: owner.clone(),
                });
            }
        }
        let route = Route {
            handler,
            names,
            key: None,
        };
        routes.insert(name.to_string(), route);
        Ok(RouteGuard {
            routes: self.clone(),
            name: name.to_string(),
        })
    }

    fn handler(&self, name: &str) -> Option<Handler> {
        let routes = self.routes.read().expect("routes lock");
        routes.get(name).map(|route| route.handler.clone())
    }

    fn set_key(&self, name: &str, key: Arc<CertifiedKey>) {
        let mut routes = self.routes.write().expect("routes lock");
        if let Some(route) = routes.get_mut(name) {
            route.key = Some(key);
        }
    }
}

/// Whether `names` holds `name`; DNS names compare without case.
fn covers(names: &[String], name: &str) -> bool {
    names.iter().any(|n| n.eq_ignore_ascii_case(name))
}

impl ResolvesServerCert for Routes {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let asked = hello.server_name()?;
        let routes = self.routes.read().expect("routes lock");
        let route = routes.values().find(|route| covers(&route.names, asked));
        if route.is_none() {
            tracing::debug!(
                server_name = asked,
                "a conversion handshake for a name no route serves"
            );
        }
        route?.key.clone()
    }
}

/// A route while it is served; dropping it removes the route.
pub struct RouteGuard {
    routes: Arc<Routes>,
    name: String,
}

impl RouteGuard {
    /// Where the route's certificate goes (`reload::follow` keeps it current).
    pub fn serving(&self) -> RouteCertificate {
        RouteCertificate {
            routes: self.routes.clone(),
            name: self.name.clone(),
        }
    }
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        let mut routes = self.routes.routes.write().expect("routes lock");
        routes.remove(&self.name);
    }
}

/// One route's certificate, served from the next handshake for its names on.
#[derive(Clone)]
pub struct RouteCertificate {
    routes: Arc<Routes>,
    name: String,
}

impl Serving for RouteCertificate {
    fn serve(&self, bundle: &Bundle) -> Result<(), TlsError> {
        let key = Arc::new(bundle.certified_key()?);
        self.routes.set_key(&self.name, key);
        Ok(())
    }
}

/// What a request needs: the routes, to find its handler.
#[derive(Clone)]
struct Shared {
    routes: Arc<Routes>,
}

/// Binds `addr` and serves `POST /convert/<route>` for every route of `routes`, each under its own
/// certificate, until the process ends; returns the bound address.
pub fn serve(addr: SocketAddr, routes: Arc<Routes>) -> anyhow::Result<SocketAddr> {
    let tls = RustlsConfig::from_config(Arc::new(server_config(routes.clone())?));
    let app = Router::new()
        .route("/convert/{route}", post(convert))
        .with_state(Shared { routes });
    serve_app(addr, tls, app)
}

async fn convert(State(shared): State<Shared>, Path(route): Path<String>, body: Bytes) -> Response {
    match shared.routes.handler(&route) {
        Some(handler) => review(&handler, body).await,
        None => (
            StatusCode::NOT_FOUND,
            format!("no conversion webhook is served at /convert/{route}"),
        )
            .into_response(),
    }
}
