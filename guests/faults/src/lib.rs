//! A reconciler component that misbehaves on purpose, for the host's fault tests.
//!
//! The parent's `spec.fault` picks the behaviour (see [`Fault`]). Without a fault it is a well-behaved
//! guest: one ConfigMap `<name>-cm` in the parent's namespace, data `{"fault": "none"}`, status
//! `{"ok": true}`; and while finalizing (without a fault or with `label:`), no children and `finalized`.
//! With any other fault, finalizing makes no difference: the fault happens.
//!
//! It also exports `convert` (world `converting-reconciler`), which fails as the object's annotation
//! `faults.example.com/convert` asks (see [`convert::convert`]) and otherwise only sets `apiVersion`.

wit_bindgen::generate!({
    path: "../../wit",
    world: "converting-reconciler",
});

mod convert;
mod fault;
mod remember;

use fault::Fault;
use reconcile::guest::log::{Level, emit};
use serde_json::{Value, json};

/// The parent's identity, as the faults need it.
pub(crate) struct Parent {
    name: String,
    namespace: Option<String>,
}

/// A ConfigMap named `name` in `namespace` with `data`, labelled `variant: <variant>` if given.
fn config_map(name: &str, namespace: Option<&str>, data: Value, variant: Option<&str>) -> String {
    let mut metadata = json!({ "name": name });
    if let Some(namespace) = namespace {
        metadata["namespace"] = namespace.into();
    }
    if let Some(variant) = variant {
        metadata["labels"] = json!({ "variant": variant });
    }
    json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data })
        .to_string()
}

impl Parent {
    /// The well-behaved child: `<name>-cm` in the parent's namespace, data `{"fault": "none"}`.
    fn own_config_map(&self, variant: Option<&str>) -> String {
        let name = format!("{}-cm", self.name);
        config_map(
            &name,
            self.namespace.as_deref(),
            json!({ "fault": "none" }),
            variant,
        )
    }
}

/// A response with these children and status.
fn respond(children: Vec<String>, status: Option<Value>) -> Response {
    Response {
        children,
        status: status.map(|s| s.to_string()),
        requeue_after_seconds: None,
        finalized: false,
    }
}

struct Component;

impl Guest for Component {
    fn reconcile(req: Request) -> Result<Response, String> {
        report_panics();
        let result = run(req);
        if let Err(message) = &result {
            emit(Level::Warn, message);
        }
        result
    }

    fn convert(object: String, to_api_version: String) -> Result<String, String> {
        report_panics();
        let result = convert::convert(&object, &to_api_version);
        if let Err(message) = &result {
            emit(Level::Warn, message);
        }
        result
    }
}

/// Built without WASI (`wasm32-unknown-unknown`), the guest has no stderr: a panic's message goes to
/// the log at `error` instead, as the MyApp guest does. The wasip2 build keeps Rust's default hook (the
/// message on stderr), so the host's tests see both ways a guest tells why it trapped.
fn report_panics() {
    #[cfg(not(target_os = "wasi"))]
    {
        static HOOK: std::sync::Once = std::sync::Once::new();
        HOOK.call_once(|| {
            std::panic::set_hook(Box::new(|info| emit(Level::Error, &info.to_string())))
        });
    }
}

/// Reads the parent and its fault, then runs the fault.
fn run(req: Request) -> Result<Response, String> {
    let parent: Value =
        serde_json::from_str(&req.parent).map_err(|e| format!("parent is not JSON: {e}"))?;
    let fault = match parent.pointer("/spec/fault") {
        None | Some(Value::Null) => Fault::None,
        Some(Value::String(s)) => Fault::parse(s)?,
        Some(other) => return Err(format!("spec.fault must be a string, got {other}")),
    };
    let text = |pointer: &str| parent.pointer(pointer).and_then(Value::as_str);
    let me = Parent {
        name: text("/metadata/name")
            .ok_or("parent has no metadata.name")?
            .to_owned(),
        namespace: text("/metadata/namespace").map(str::to_owned),
    };
    if req.finalizing && matches!(fault, Fault::None | Fault::Label(_)) {
        return Ok(Response {
            finalized: true,
            ..respond(Vec::new(), None)
        });
    }
    fault.run(&me)
}

export!(Component);
