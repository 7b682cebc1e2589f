//! The Go guest kit's tool, called by `componentize.sh` beside it:
//!
//!     go-guest-kit bindings WIT_DIR WORLD OUT_DIR
//!     go-guest-kit componentize CORE.wasm WIT_DIR WORLD OUT.wasm
//!
//! `bindings` runs wit-bindgen's Go generator (the `wit-bindgen go` of wit-bindgen-cli, here as a
//! library so that one small build serves both steps): a standalone Go module `wit_component` whose
//! `wit_exports.go` holds the `//go:wasmexport` functions and calls the guest's `export_wit_world`
//! package. `componentize` is what `wasm-tools component embed` + `component new --adapt` would do, from
//! the crates those commands are built on: Go (`GOOS=wasip1`, `-buildmode=c-shared`) writes a core module
//! that imports WASI preview1, which the reactor adapter maps onto the WASI 0.2 the host links.

use std::path::Path;

use anyhow::{Context, Result, bail};
use wit_component::{ComponentEncoder, StringEncoding};
use wit_parser::{Resolve, WorldId};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["bindings", wit, world, out] => bindings(Path::new(wit), world, Path::new(out)),
        ["componentize", core, wit, world, out] => {
            componentize(Path::new(core), Path::new(wit), world, Path::new(out))
        }
        _ => bail!(
            "usage: go-guest-kit bindings WIT_DIR WORLD OUT_DIR\n       \
             go-guest-kit componentize CORE.wasm WIT_DIR WORLD OUT.wasm"
        ),
    }
}

/// The WIT package in `wit` and its world `world`.
fn load(wit: &Path, world: &str) -> Result<(Resolve, WorldId)> {
    let mut resolve = Resolve::default();
    let (package, _) = resolve
        .push_path(wit)
        .with_context(|| format!("reading the WIT in {}", wit.display()))?;
    let world = resolve
        .select_world(&[package], Some(world))
        .with_context(|| format!("no world `{world}` in {}", wit.display()))?;
    Ok((resolve, world))
}

fn bindings(wit: &Path, world: &str, out: &Path) -> Result<()> {
    let (mut resolve, world) = load(wit, world)?;
    let mut files = wit_bindgen_core::Files::default();
    let opts = wit_bindgen_go::Opts {
        quiet: true,
        ..Default::default()
    };
    opts.build()
        .generate(&mut resolve, world, &mut files)
        .context("generating the Go bindings")?;
    for (name, contents) in files.iter() {
        let path = out.join(name);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        std::fs::write(&path, contents).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

fn componentize(core: &Path, wit: &Path, world: &str, out: &Path) -> Result<()> {
    let (resolve, world) = load(wit, world)?;
    let mut module = std::fs::read(core).with_context(|| format!("reading {}", core.display()))?;
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        StringEncoding::UTF8,
        false,
    )?;
    // The module exports `cabi_realloc` (the Go runtime package of the bindings does): wit-component
    // then gives the adapter its state through it. Without it the adapter would take pages with
    // `memory.grow`, which Go's allocator believes are its own.
    let component = ComponentEncoder::default()
        .validate(true)
        .module(&module)?
        .adapter(
            wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME,
            wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
        )?
        .encode()
        .with_context(|| format!("turning {} into a component", core.display()))?;
    std::fs::write(out, component).with_context(|| format!("writing {}", out.display()))
}
