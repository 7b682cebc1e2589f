//! Host-side bindings of every contract version the host serves, generated from `wit/` at build time so
//! that the host and every guest are held to the same contract files.
//!
//! A module is linked against the newest world it implements (`Linked`), and each call goes through the
//! instance of that world (`Bindings`). The host speaks 0.2.0 (`Request`, `Response`); a 0.1.0 guest gets
//! the same request without the fields it does not know, so it is served exactly as before.

use wasmtime::Store;
use wasmtime::component::{HasSelf, Linker};

use super::state::GuestState;

/// Contract 0.1.0, frozen (`wit/v0.1.0`).
mod v0_1 {
    wasmtime::component::bindgen!({ path: "../wit/v0.1.0", world: "reconciler" });
}

/// Contract 0.2.0 (`wit/`), reconcile only.
mod v0_2 {
    wasmtime::component::bindgen!({ path: "../wit", world: "reconciler" });
}

/// Contract 0.2.0 with `convert`: the same interfaces as `v0_2`, not generated twice.
mod v0_2_converting {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "converting-reconciler",
        with: {
            "reconcile:guest/types": super::v0_2::reconcile::guest::types,
            "reconcile:guest/log": super::v0_2::reconcile::guest::log,
        },
    });
}

pub(crate) use v0_1::reconcile::guest::log::Level as LevelV0_1;
pub(crate) use v0_1::reconcile::guest::{log as log_v0_1, types as types_v0_1};
pub use v0_2::reconcile::guest::log::Level;
pub use v0_2::reconcile::guest::types::{Request, Response};
pub(crate) use v0_2::reconcile::guest::{log, types};

impl Request {
    /// The request for a parent that owns no children yet, not being deleted.
    pub fn for_parent(parent: &serde_json::Value) -> Request {
        Request {
            parent: parent.to_string(),
            children: Vec::new(),
            related: Vec::new(),
            finalizing: false,
        }
    }
}

/// The worlds a module may implement, newest first, for messages that say what a refused component
/// should implement.
pub const WORLDS: [&str; 3] = [
    "reconcile:guest/converting-reconciler@0.2.0",
    "reconcile:guest/reconciler@0.2.0",
    "reconcile:guest/reconciler@0.1.0",
];

/// Adds the imports of every contract version (each version's `log` is a distinct import name).
pub(crate) fn add_to_linker(linker: &mut Linker<GuestState>) -> wasmtime::Result<()> {
    v0_1::Reconciler::add_to_linker::<_, HasSelf<_>>(linker, |state| state)?;
    v0_2::Reconciler::add_to_linker::<_, HasSelf<_>>(linker, |state| state)
}

/// A component with its imports resolved and its exports checked against one world: instantiating it
/// costs microseconds.
pub(crate) enum Linked {
    V0_1(v0_1::ReconcilerPre<GuestState>),
    V0_2(v0_2::ReconcilerPre<GuestState>),
    V0_2Converting(v0_2_converting::ConvertingReconcilerPre<GuestState>),
}

impl Linked {
    /// Links `instance` against the newest world whose exports it has; the errors of each world, if none.
    pub(crate) fn new(
        instance: wasmtime::component::InstancePre<GuestState>,
    ) -> Result<Linked, Vec<String>> {
        let mut errors = Vec::new();
        match v0_2_converting::ConvertingReconcilerPre::new(instance.clone()) {
            Ok(pre) => return Ok(Linked::V0_2Converting(pre)),
            Err(e) => errors.push(format!("{e:#}")),
        }
        match v0_2::ReconcilerPre::new(instance.clone()) {
            Ok(pre) => return Ok(Linked::V0_2(pre)),
            Err(e) => errors.push(format!("{e:#}")),
        }
        match v0_1::ReconcilerPre::new(instance) {
            Ok(pre) => Ok(Linked::V0_1(pre)),
            Err(e) => {
                errors.push(format!("{e:#}"));
                Err(errors)
            }
        }
    }

    /// The world this module implements.
    pub(crate) fn world(&self) -> &'static str {
        match self {
            Linked::V0_2Converting(_) => WORLDS[0],
            Linked::V0_2(_) => WORLDS[1],
            Linked::V0_1(_) => WORLDS[2],
        }
    }

    pub(crate) fn converts(&self) -> bool {
        matches!(self, Linked::V0_2Converting(_))
    }

    pub(crate) fn instantiate(&self, store: &mut Store<GuestState>) -> wasmtime::Result<Bindings> {
        Ok(match self {
            Linked::V0_1(pre) => Bindings::V0_1(pre.instantiate(store)?),
            Linked::V0_2(pre) => Bindings::V0_2(pre.instantiate(store)?),
            Linked::V0_2Converting(pre) => Bindings::V0_2Converting(pre.instantiate(store)?),
        })
    }
}

/// One instance, of the world its module was linked against.
pub(crate) enum Bindings {
    V0_1(v0_1::Reconciler),
    V0_2(v0_2::Reconciler),
    V0_2Converting(v0_2_converting::ConvertingReconciler),
}

impl Bindings {
    pub(crate) fn reconcile(
        &self,
        store: &mut Store<GuestState>,
        request: &Request,
    ) -> wasmtime::Result<Result<Response, String>> {
        match self {
            Bindings::V0_2(guest) => guest.call_reconcile(store, request),
            Bindings::V0_2Converting(guest) => guest.call_reconcile(store, request),
            Bindings::V0_1(guest) => {
                let request = types_v0_1::Request {
                    parent: request.parent.clone(),
                    children: request.children.clone(),
                    finalizing: request.finalizing,
                };
                let answer = guest.call_reconcile(store, &request)?;
                Ok(answer.map(|response| Response {
                    children: response.children,
                    status: response.status,
                    requeue_after_seconds: response.requeue_after_seconds,
                    finalized: response.finalized,
                }))
            }
        }
    }

    /// `None` when the instance's world has no `convert`.
    pub(crate) fn convert(
        &self,
        store: &mut Store<GuestState>,
        object: &str,
        to_api_version: &str,
    ) -> Option<wasmtime::Result<Result<String, String>>> {
        match self {
            Bindings::V0_2Converting(guest) => {
                Some(guest.call_convert(store, object, to_api_version))
            }
            Bindings::V0_1(_) | Bindings::V0_2(_) => None,
        }
    }
}
