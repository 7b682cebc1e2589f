//! The CRD conversion webhook for the parent kind, backed by the guest's `convert` export.
//!
//! The data flow: at start, `tls` loads the serving certificate from a mounted Secret, or makes a CA
//! and certificate and keeps them in a Secret (`secret`) shared by every replica; `ca_bundle` puts that
//! CA into the CRD's `spec.conversion.webhook.clientConfig.caBundle` and keeps it there; `server`
//! serves `POST /convert` over TLS. For each ConversionReview the API server sends, `review` calls the
//! converter once per object and checks each answer (an object, in the desired apiVersion, with the
//! same kind, name, namespace and uid): one failure fails the whole review with a message naming the
//! object, which the API server passes on to the client that read the object.
//!
//! The converter is a plain function so that this module knows nothing of wasm: the host wraps the
//! guest's `convert(object, to-api-version) -> result<string, string>` in it.

pub mod review;
pub mod secret;
pub mod server;
pub mod tls;

use std::sync::Arc;

use serde_json::Value;

pub use review::{ConvertFn, ObjectError, answer};
pub use secret::SecretRef;
pub use tls::{Bundle, TlsError};

/// Converts one object to the given apiVersion, shareable with the server's blocking threads.
pub type Converter = Arc<dyn Fn(&Value, &str) -> Result<Value, String> + Send + Sync>;
