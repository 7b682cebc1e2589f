//! Host-side bindings of every contract version the host serves, generated from `wit/` at build time so
//! that the host and every guest are held to the same contract files.
//!
//! A module is linked against the newest contract it implements (`Linked`): 0.1.0's world, or 0.2.0's
//! base world with its optional exports (`convert`, `related`) looked up on the same instance; each
//! call goes through that instance (`Bindings`). The host speaks 0.2.0 (`Request`, `Response`); a 0.1.0 guest gets
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

/// The optional exports of 0.2.0, each from the world that adds it to `reconciler`. Only their
/// export indices are used (`*Indices`), on the instance of the base world: the interfaces are
/// `v0_2`'s, not generated again.
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

mod v0_2_relating {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "relating-reconciler",
        with: {
            "reconcile:guest/types": super::v0_2::reconcile::guest::types,
            "reconcile:guest/log": super::v0_2::reconcile::guest::log,
        },
    });
}

pub(crate) use v0_1::reconcile::guest::log::Level as LevelV0_1;
pub(crate) use v0_1::reconcile::guest::{log as log_v0_1, types as types_v0_1};
pub use v0_2::reconcile::guest::log::Level;
pub use v0_2::reconcile::guest::types::{Request, Response, Selector};
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
/// should implement. 0.2.0's are the base world and what each optional export adds to it.
pub const WORLDS: [&str; 5] = [
    "reconcile:guest/converting-relating-reconciler@0.2.0",
    "reconcile:guest/relating-reconciler@0.2.0",
    "reconcile:guest/converting-reconciler@0.2.0",
    "reconcile:guest/reconciler@0.2.0",
    "reconcile:guest/reconciler@0.1.0",
];

/// Adds the imports of every contract version (each version's `log` is a distinct import name).
pub(crate) fn add_to_linker(linker: &mut Linker<GuestState>) -> wasmtime::Result<()> {
    v0_1::Reconciler::add_to_linker::<_, HasSelf<_>>(linker, |state| state)?;
    v0_2::Reconciler::add_to_linker::<_, HasSelf<_>>(linker, |state| state)
}

/// The optional exports of a 0.2.0 module, found and type-checked at load. Each world of 0.2.0 is the
/// base world plus optional exports, so the host links the base world and looks the optional ones up
/// on the same instance, rather than linking one world per combination of exports (an enum that
/// would double with every optional export the contract gains).
#[derive(Clone)]
pub(crate) struct Optional {
    convert: Option<v0_2_converting::ConvertingReconcilerIndices>,
    related: Option<v0_2_relating::RelatingReconcilerIndices>,
}

/// A component with its imports resolved and its exports checked against one world: instantiating it
/// costs microseconds.
pub(crate) enum Linked {
    V0_1(v0_1::ReconcilerPre<GuestState>),
    V0_2 {
        pre: wasmtime::component::InstancePre<GuestState>,
        base: v0_2::ReconcilerIndices,
        optional: Optional,
    },
}

impl Linked {
    /// Links `instance` against the newest contract whose exports it has; the errors of each, if none.
    pub(crate) fn new(
        instance: wasmtime::component::InstancePre<GuestState>,
    ) -> Result<Linked, Vec<String>> {
        let mut errors = Vec::new();
        match v0_2::ReconcilerIndices::new(&instance) {
            Ok(base) => {
                // An export that is absent, or present with another type, leaves the module without it
                // (a mistyped `related` is then reported by what the module's world says it lacks).
                let optional = Optional {
                    convert: v0_2_converting::ConvertingReconcilerIndices::new(&instance).ok(),
                    related: v0_2_relating::RelatingReconcilerIndices::new(&instance).ok(),
                };
                return Ok(Linked::V0_2 {
                    pre: instance,
                    base,
                    optional,
                });
            }
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

    /// The world this module implements: the newest one whose exports it has.
    pub(crate) fn world(&self) -> &'static str {
        match self {
            Linked::V0_2 { optional, .. } => {
                match (optional.convert.is_some(), optional.related.is_some()) {
                    (true, true) => WORLDS[0],
                    (false, true) => WORLDS[1],
                    (true, false) => WORLDS[2],
                    (false, false) => WORLDS[3],
                }
            }
            Linked::V0_1(_) => WORLDS[4],
        }
    }

    pub(crate) fn converts(&self) -> bool {
        matches!(self, Linked::V0_2 { optional, .. } if optional.convert.is_some())
    }

    pub(crate) fn relates(&self) -> bool {
        matches!(self, Linked::V0_2 { optional, .. } if optional.related.is_some())
    }

    pub(crate) fn instantiate(&self, store: &mut Store<GuestState>) -> wasmtime::Result<Bindings> {
        Ok(match self {
            Linked::V0_1(pre) => Bindings::V0_1(pre.instantiate(store)?),
            Linked::V0_2 {
                pre,
                base,
                optional,
            } => {
                let instance = pre.instantiate(&mut *store)?;
                Bindings::V0_2 {
                    guest: base.load(&mut *store, &instance)?,
                    instance,
                    optional: optional.clone(),
                }
            }
        })
    }
}

/// One instance, of the contract its module was linked against.
pub(crate) enum Bindings {
    V0_1(v0_1::Reconciler),
    V0_2 {
        guest: v0_2::Reconciler,
        instance: wasmtime::component::Instance,
        optional: Optional,
    },
}

impl Bindings {
    pub(crate) fn reconcile(
        &self,
        store: &mut Store<GuestState>,
        request: &Request,
    ) -> wasmtime::Result<Result<Response, String>> {
        match self {
            Bindings::V0_2 { guest, .. } => guest.call_reconcile(store, request),
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

    /// The instance and the optional exports of a 0.2.0 module (`None` for 0.1.0: it has none).
    fn optional(&self) -> Option<(&wasmtime::component::Instance, &Optional)> {
        match self {
            Bindings::V0_2 {
                instance, optional, ..
            } => Some((instance, optional)),
            Bindings::V0_1(_) => None,
        }
    }

    /// `None` when the module has no `convert`.
    pub(crate) fn convert(
        &self,
        store: &mut Store<GuestState>,
        object: &str,
        to_api_version: &str,
    ) -> Option<wasmtime::Result<Result<String, String>>> {
        let (instance, optional) = self.optional()?;
        let guest = optional.convert.as_ref()?.load(&mut *store, instance);
        Some(guest.and_then(|guest| guest.call_convert(store, object, to_api_version)))
    }

    /// `None` when the module has no `related`.
    pub(crate) fn related(
        &self,
        store: &mut Store<GuestState>,
        parent: &str,
    ) -> Option<wasmtime::Result<Result<Vec<Selector>, String>>> {
        let (instance, optional) = self.optional()?;
        let guest = optional.related.as_ref()?.load(&mut *store, instance);
        Some(guest.and_then(|guest| guest.call_related(store, parent)))
    }
}
