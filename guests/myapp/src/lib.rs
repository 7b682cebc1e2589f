//! The seed's `MyApp` controller logic, as a pure function, and its conversion between versions.
//!
//! A `MyApp` (`spec.replicas`, default 1; `spec.image`, default `nginx:alpine`) wants one Deployment
//! `<name>-deploy` running that image, and reports `status.phase`: `Created` until the observed Deployment
//! has as many ready replicas as asked, then `Ready`.
//!
//! That is version `example.com/v1alpha1`, the seed's. Version `example.com/v1beta1` moves the image to
//! `spec.template.image` and adds `spec.template.resources` (a corev1 `ResourceRequirements`), which become
//! the container's resources; the defaults, the status and the rules are the same. [`reconcile`] reads
//! both, and [`convert()`] converts between them both ways without loss: a v1alpha1 object keeps what it
//! cannot hold of a v1beta1 template in the annotation [`convert::TEMPLATE_ANNOTATION`], which reconcile
//! also reads, so a parent gets the same Deployment at either version.
//!
//! The function only needs `serde`, so the same code builds natively (unit tests, the benchmark's
//! native floor) and as a component: the WebAssembly glue is in [`component`], compiled for wasm32 only.
//! Its parts follow the data: [`parent`] and [`observed`] read, [`desired`] writes, [`convert`] converts. Reading and writing
//! are typed and borrow from the input: a `serde_json::Value` tree costs an allocation per key and per
//! string, and a reconcile in wasm spent most of its time there (4-5x faster per call without).

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
mod alloc;
#[cfg(target_arch = "wasm32")]
mod component;
pub mod convert;
mod desired;
mod object;
mod observed;
mod parent;

pub use convert::convert;
use desired::{Deployment, Status};
use parent::MyApp;

/// `spec.replicas` when the parent leaves it out.
pub const DEFAULT_REPLICAS: i32 = 1;
/// `spec.image` when the parent leaves it out.
pub const DEFAULT_IMAGE: &str = "nginx:alpine";

/// What the guest wants, the native mirror of the contract's `response` record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Output {
    /// The desired children, one JSON object each.
    pub children: Vec<String>,
    /// The guest-owned part of `.status` (a JSON object), or `None` to leave the status alone.
    pub status: Option<String>,
    /// Reconcile again after this many seconds even if nothing changes.
    pub requeue_after_seconds: Option<u32>,
    /// With `finalizing`: cleanup is done.
    pub finalized: bool,
}

/// Computes the desired children and status of one `MyApp`.
///
/// `parent_json` is the `MyApp` object, `children_json` the children it owns (each one JSON object), as the
/// host observed them. While `finalizing`, there is nothing to clean up beyond what the host prunes, so the
/// answer is no children and `finalized`, whatever the spec says (a bad spec must not block deletion).
///
/// Errors (never panics) on a parent that is not a JSON object with a name, on an invalid spec (the message
/// names the field), and on an observed child that is not JSON.
pub fn reconcile(
    parent_json: &str,
    children_json: &[String],
    finalizing: bool,
) -> Result<Output, String> {
    if finalizing {
        return Ok(Output {
            finalized: true,
            ..Output::default()
        });
    }
    let app = MyApp::read(parent_json)?;
    let deploy_name = format!("{}-deploy", app.name);
    let ready = observed::ready_replicas(children_json, &deploy_name)?;
    let phase = if ready == Some(i64::from(app.replicas)) {
        "Ready"
    } else {
        "Created"
    };
    let deployment = Deployment::new(
        &app.name,
        app.namespace.as_deref(),
        &deploy_name,
        app.replicas,
        &app.image,
        app.resources.as_ref(),
    );
    let status = Status {
        phase,
        replicas: app.replicas,
        ready_replicas: ready.unwrap_or(0),
    };
    Ok(Output {
        children: vec![to_json(&deployment)],
        status: Some(to_json(&status)),
        requeue_after_seconds: None,
        finalized: false,
    })
}

fn to_json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).expect("plain structs of strings and integers always serialize")
}
