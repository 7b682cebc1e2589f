//! The guest runtime: everything about running untrusted reconcile logic compiled to a WebAssembly
//! component. One engine per process (`engine`), modules compiled once (`compile`, in a child process
//! for the host's commands) and cached on disk (`module`, `cache`), and calls that are fresh, sandboxed
//! and bounded (`call`, `convert`, `related`, `state`, `stdio`, `reuse`), with their memory bounded in
//! total (`budget`).

mod bindings;
mod budget;
mod cache;
mod call;
mod codegen;
mod compile;
mod config;
mod convert;
mod engine;
mod error;
mod module;
mod related;
mod reuse;
mod state;
mod stdio;
mod warm;

pub use bindings::{Request, Response, Selector, WORLDS};
pub use budget::MemoryBudget;
pub use call::Answer;
pub(crate) use call::json_kind;
#[cfg(test)]
pub(crate) use call::parse_answer;
pub use compile::{COMPILE_COMMAND, ChildCompiler, Compiler, compile_stdin_to_stdout};
pub use config::RuntimeConfig;
pub use engine::Runtime;
pub use error::{GuestError, LoadError};
pub use module::{Module, digest_of};
