//! Link settings for the component.
//!
//! Set here rather than in a `.cargo/config.toml`, which cargo reads from the current directory only, so it
//! would be skipped by `cargo build --manifest-path guests/Cargo.toml` run from the repo root.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        // A 64 KiB shadow stack instead of the default 1 MiB: the stack sits at the start of linear
        // memory, so this shrinks the initial memory of every fresh instance from 17 pages to 2-3.
        println!("cargo:rustc-link-arg-cdylib=-zstack-size=65536");
    }
}
