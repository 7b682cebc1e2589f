//! The flags of `render`, turned into its [`RenderOptions`].

use std::path::PathBuf;

use clap::Args;

use super::RuntimeArgs;
use super::value::one_of;
use crate::kind::Gvk;
use crate::render::RenderOptions;
use crate::text::OutputFormat;

#[derive(Debug, Args)]
pub struct RenderArgs {
    /// The reconciler component (.wasm).
    #[arg(long, short = 'm')]
    pub module: PathBuf,
    /// The parent object (YAML or JSON).
    #[arg(long = "filename", short = 'f')]
    pub parent: PathBuf,
    /// Observed children (multi-document YAML), as the controller would pass them.
    #[arg(long)]
    pub observed: Option<PathBuf>,
    /// Objects available as related objects (multi-document YAML): the ones the module's `related`
    /// selects for the parent reach the guest, matched as the controller matches its caches.
    #[arg(long)]
    pub related: Option<PathBuf>,
    /// Allowed child kind, GROUP/VERSION/KIND (repeatable). Without any, every kind is accepted.
    #[arg(long = "child")]
    pub children: Vec<Gvk>,
    /// Pass `finalizing: true`, as while the parent is being deleted.
    #[arg(long)]
    pub finalizing: bool,
    /// Instead of reconciling: print the object converted to this version (e.g. `example.com/v1beta1`)
    /// by the module's `convert`, as the CRD conversion webhook would.
    #[arg(long, value_name = "API_VERSION", conflicts_with_all = ["observed", "related", "finalizing", "children"])]
    pub convert_to: Option<String>,
    #[arg(long, short = 'o', default_value = "yaml", value_parser = one_of::<OutputFormat>(&OutputFormat::NAMES))]
    pub output: OutputFormat,
    #[command(flatten)]
    pub runtime: RuntimeArgs,
}

impl RenderArgs {
    pub fn options(&self) -> RenderOptions {
        RenderOptions {
            module: self.module.clone(),
            parent: self.parent.clone(),
            observed: self.observed.clone(),
            related: self.related.clone(),
            children: self.children.clone(),
            finalizing: self.finalizing,
            convert_to: self.convert_to.clone(),
            output: self.output,
            runtime: self.runtime.config(),
        }
    }
}
