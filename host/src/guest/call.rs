//! One reconcile call: bounded in time, memory and output, and turned from raw guest strings into
//! parsed JSON the controller can validate.

use std::time::Duration;

use serde_json::{Map, Value};
use wasmtime::{Store, Trap};

use super::bindings::{Request, Response};
use super::error::GuestError;
use super::module::Module;
use super::state::GuestState;
use crate::text::truncate;

/// Guest messages end up in conditions and Events: keep them readable.
const MAX_MESSAGE: usize = 1024;

/// The guest's answer, parsed. Validation against the safety rules happens in `crate::validate`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Answer {
    pub children: Vec<Value>,
    pub status: Option<Map<String, Value>>,
    pub requeue_after: Option<Duration>,
    pub finalized: bool,
}

impl Module {
    /// Calls the guest for one parent and parses its answer. `tag` names the parent in guest logs.
    pub fn call(&self, tag: &str, request: &Request) -> Result<Answer, GuestError> {
        let response = self.call_raw(tag, request)?;
        parse_answer(response, self.runtime.config.max_output_bytes)
    }

    /// Calls the guest and returns its strings as they are (the benchmarks measure this part alone).
    pub fn call_raw(&self, tag: &str, request: &Request) -> Result<Response, GuestError> {
        if self.runtime.config.reuse_instance_calls > 0 {
            return self.call_reused(tag, request);
        }
        let mut store = self.new_store(tag.to_string());
        let result = self
            .pre
            .instantiate(&mut store)
            .map_err(|e| GuestError::Instantiate(format!("{e:#}")))
            .and_then(|bindings| {
                let result = bindings.call_reconcile(&mut store, request);
                classify(&store, self.runtime.config.deadline, result)
            });
        store.data_mut().flush_stdio();
        result
    }

    /// A store with a fresh WASI context, the memory cap and the deadline armed.
    pub(crate) fn new_store(&self, tag: String) -> Store<GuestState> {
        let config = &self.runtime.config;
        let mut store = Store::new(
            &self.runtime.engine,
            GuestState::new(tag, config.memory_limit, config.max_log_bytes),
        );
        store.limiter(|state| &mut state.memory);
        store.set_epoch_deadline(self.runtime.deadline_ticks());
        store
    }
}

/// Maps wasmtime's error to what happened, using the limiter's record to tell a memory cap from a
/// genuine trap.
pub(crate) fn classify(
    store: &Store<GuestState>,
    deadline: Duration,
    result: wasmtime::Result<Result<Response, String>>,
) -> Result<Response, GuestError> {
    match result {
        Ok(Ok(response)) => Ok(response),
        Ok(Err(message)) => Err(GuestError::Rejected(truncate(message, MAX_MESSAGE))),
        Err(_) if store.data().memory.exceeded => Err(GuestError::MemoryLimit {
            limit_bytes: store.data().memory.limit,
        }),
        Err(e) if e.downcast_ref::<Trap>() == Some(&Trap::Interrupt) => {
            Err(GuestError::Deadline(deadline))
        }
        Err(e) => Err(GuestError::Trap(truncate(format!("{e:#}"), MAX_MESSAGE))),
    }
}

fn parse_answer(response: Response, max_output_bytes: usize) -> Result<Answer, GuestError> {
    let size = response.children.iter().map(String::len).sum::<usize>()
        + response.status.as_ref().map_or(0, String::len);
    if size > max_output_bytes {
        return Err(GuestError::OutputTooLarge {
            size,
            limit: max_output_bytes,
        });
    }
    let children = response
        .children
        .iter()
        .enumerate()
        .map(|(i, child)| {
            serde_json::from_str(child).map_err(|e| GuestError::InvalidJson {
                what: format!("child {i}"),
                reason: e.to_string(),
            })
        })
        .collect::<Result<Vec<Value>, _>>()?;
    let status = match response.status {
        None => None,
        Some(text) => match serde_json::from_str(&text) {
            Ok(Value::Object(map)) => Some(map),
            Ok(other) => {
                return Err(GuestError::InvalidJson {
                    what: "status".into(),
                    reason: format!("expected an object, got {}", json_kind(&other)),
                });
            }
            Err(e) => {
                return Err(GuestError::InvalidJson {
                    what: "status".into(),
                    reason: e.to_string(),
                });
            }
        },
    };
    Ok(Answer {
        children,
        status,
        requeue_after: response
            .requeue_after_seconds
            .map(|s| Duration::from_secs(s.into())),
        finalized: response.finalized,
    })
}

pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
