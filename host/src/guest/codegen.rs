//! The wasmtime settings that shape compiled code, below both the engine (`engine`) and the compiler
//! (`compile`): an artifact compiled in the compiler's process loads only into an engine with the same
//! settings.

use wasmtime::Config;

/// The settings that shape compiled code, shared with the compiler process (`compile`) so that its
/// artifacts fit this engine. How instances are allocated is not among them: wasmtime's pooling
/// allocator runs the same code as its default one.
pub(crate) fn codegen_config() -> Config {
    let mut wasm = Config::new();
    wasm.wasm_component_model(true)
        .epoch_interruption(true)
        .memory_init_cow(true);
    wasm
}
