//! One reconcile call: bounded in time, memory and output, and turned from raw guest strings into
//! parsed JSON the controller can validate.

use std::time::Duration;

use serde_json::{Map, Value};
use wasmtime::{Store, Trap};

use super::bindings::{Bindings, Request, Response};
use super::budget::Reservation;
use super::config::RuntimeConfig;
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
        parse_answer(response, &self.runtime.config)
    }

    /// Calls the guest and returns its strings as they are (the benchmarks measure this part alone).
    pub fn call_raw(&self, tag: &str, request: &Request) -> Result<Response, GuestError> {
        self.call_export(tag, |bindings, store| bindings.reconcile(store, request))
    }

    /// Runs `call` on an instance as the module's calls run: fresh, or reused in reuse mode.
    pub(crate) fn call_export<T>(
        &self,
        tag: &str,
        call: impl FnOnce(&Bindings, &mut Store<GuestState>) -> wasmtime::Result<Result<T, String>>,
    ) -> Result<T, GuestError> {
        if self.runtime.config.reuse_instance_calls > 0 {
            return self.call_reused(tag, call);
        }
        self.call_fresh(tag, call)
    }

    /// Runs `call` on a fresh instance, within the deadline and the memory cap.
    pub(crate) fn call_fresh<T>(
        &self,
        tag: &str,
        call: impl FnOnce(&Bindings, &mut Store<GuestState>) -> wasmtime::Result<Result<T, String>>,
    ) -> Result<T, GuestError> {
        let mut store = self.new_store(tag.to_string());
        match self.linked.instantiate(&mut store) {
            Ok(bindings) => {
                let result = call(&bindings, &mut store);
                finish(&mut store, self.runtime.config.deadline, result)
            }
            Err(e) => {
                store.data_mut().flush_stdio();
                Err(GuestError::Instantiate(format!("{e:#}")))
            }
        }
    }

    /// A store with a fresh WASI context, the memory cap and the deadline armed.
    pub(crate) fn new_store(&self, tag: String) -> Store<GuestState> {
        let config = &self.runtime.config;
        let mut store = Store::new(
            &self.runtime.engine,
            GuestState::new(
                tag,
                config.memory_limit,
                Reservation::new(self.runtime.budget.clone(), config.deadline),
                config.max_log_bytes,
            ),
        );
        store.limiter(|state| &mut state.memory);
        store.set_epoch_deadline(self.runtime.deadline_ticks());
        store
    }
}

/// Ends a call: moves the guest's output to the log and maps the result to what happened.
pub(crate) fn finish<T>(
    store: &mut Store<GuestState>,
    deadline: Duration,
    result: wasmtime::Result<Result<T, String>>,
) -> Result<T, GuestError> {
    let stderr = store.data_mut().flush_stdio();
    classify(store, deadline, result, &stderr)
}

/// Maps wasmtime's error to what happened, using the limiter's record to tell a memory cap from a
/// genuine trap. A trap is told by what the guest last wrote to stderr (a Rust panic message, a JS
/// or Python exception) or, if it wrote nothing there, by its last error-level log line (how a guest
/// without WASI, hence without stderr, reports a panic); not by the wasm backtrace, which goes to the
/// log at debug level.
fn classify<T>(
    store: &Store<GuestState>,
    deadline: Duration,
    result: wasmtime::Result<Result<T, String>>,
    stderr: &str,
) -> Result<T, GuestError> {
    match result {
        Ok(Ok(response)) => Ok(response),
        Ok(Err(message)) => Err(GuestError::Rejected(truncate(message, MAX_MESSAGE))),
        Err(_) if store.data().memory.exceeded => Err(GuestError::MemoryLimit {
            limit_bytes: store.data().memory.limit,
        }),
        Err(_) if store.data().memory.budget_exhausted => Err(GuestError::MemoryBudget {
            budget_bytes: store.data().memory.reservation.budget(),
        }),
        Err(e) if e.downcast_ref::<Trap>() == Some(&Trap::Interrupt) => {
            Err(GuestError::Deadline(deadline))
        }
        Err(e) => {
            tracing::debug!(target: "guest", error = format!("{e:?}"), "guest trapped");
            let what = match e.downcast_ref::<Trap>() {
                Some(trap) => trap.to_string(),
                None => e.to_string(),
            };
            Err(GuestError::Trap {
                what,
                said: said(stderr, &store.data().last_error),
            })
        }
    }
}

/// What a trapped guest said: the end of its stderr, or else its last error-level log line.
fn said(stderr: &str, last_error: &str) -> String {
    match last_words(stderr) {
        words if words.is_empty() => last_words(last_error),
        words => words,
    }
}

/// The end of what the guest wrote to stderr, on one line, without the Rust runtime's hint about
/// backtraces: where a panic message or an exception is.
fn last_words(stderr: &str) -> String {
    let text = stderr
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("note: run with `RUST_BACKTRACE"))
        .collect::<Vec<_>>()
        .join(" ");
    match text.char_indices().rev().nth(MAX_MESSAGE - 1) {
        Some((cut, _)) => format!("...{}", &text[cut..]),
        None => text,
    }
}

/// The guest's answer as the host uses it: sizes within the limits, every child and the status JSON.
pub(crate) fn parse_answer(
    response: Response,
    config: &RuntimeConfig,
) -> Result<Answer, GuestError> {
    let status_size = response.status.as_ref().map_or(0, String::len);
    let size = response.children.iter().map(String::len).sum::<usize>() + status_size;
    if size > config.max_output_bytes {
        return Err(GuestError::OutputTooLarge {
            size,
            limit: config.max_output_bytes,
        });
    }
    if status_size > config.max_status_bytes {
        return Err(GuestError::StatusTooLarge {
            size: status_size,
            limit: config.max_status_bytes,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trapped_guest_said_its_stderr_or_else_its_last_error_log_line() {
        let panic = "panicked at src/lib.rs:3:5:\nspec.size must be positive";
        assert_eq!(
            said("", panic),
            "panicked at src/lib.rs:3:5: spec.size must be positive"
        );
        assert_eq!(
            said(
                "boom\nnote: run with `RUST_BACKTRACE=1` for a backtrace\n",
                panic
            ),
            "boom"
        );
        assert_eq!(said(" \n", ""), "");
    }
}
