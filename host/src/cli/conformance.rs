//! The flags of `conformance`.

use std::path::PathBuf;

use clap::Args;

use super::RuntimeArgs;
use crate::kind::Gvk;

#[derive(Debug, Args)]
pub struct ConformanceArgs {
    /// The reconciler component (.wasm).
    #[arg(long, short = 'm')]
    pub module: PathBuf,
    /// The fixture cases: one directory per case, see `reconcile_host::conformance`
    /// (e.g. guests/myapp/fixtures).
    #[arg(long)]
    pub fixtures: PathBuf,
    /// Allowed child kind, GROUP/VERSION/KIND (repeatable). Without any, every kind is accepted.
    #[arg(long = "child")]
    pub children: Vec<Gvk>,
    #[command(flatten)]
    pub runtime: RuntimeArgs,
}
