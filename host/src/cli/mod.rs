//! Command-line interface: the top of the crate, where flags become the plain values the domain
//! modules take (`RunOptions`, `ServeOptions`, `PlanOptions`, ...); no other module knows clap. One
//! file per command's flags, plus the flags several commands share (`host`, `runtime`, `reconciler`,
//! `oci`, `conversion`). Every flag of `run` and `serve` has an environment variable too, so the same
//! binary is configured by a Deployment's `env` or by hand.

mod compile;
mod conformance;
mod conversion;
mod host;
mod migrate;
mod oci;
mod plan;
mod push;
mod reconciler;
mod render;
mod run;
mod runtime;
mod serve;
mod value;

use clap::{Parser, Subcommand};

use crate::telemetry::LogFormat;
pub use crate::text::parse_period;
pub use compile::CompileModuleArgs;
pub use conformance::ConformanceArgs;
pub use conversion::ConversionArgs;
pub use host::HostArgs;
pub use migrate::MigrateArgs;
pub use oci::{CredentialsArgs, OciArgs, TransportArgs};
pub use plan::PlanArgs;
pub use push::PushArgs;
pub use reconciler::{NameArgs, PolicyArgs, SelectionArgs, UpdateArgs};
pub use render::RenderArgs;
pub use run::RunArgs;
pub use runtime::RuntimeArgs;
pub use serve::ServeArgs;
use value::one_of;

#[derive(Debug, Parser)]
#[command(
    name = "reconcile-host",
    version,
    about = "A Kubernetes controller whose reconcile logic is a WebAssembly component"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Log format: text for people, json for log pipelines.
    #[arg(
        long,
        global = true,
        env = "RECONCILE_HOST_LOG_FORMAT",
        default_value = "text",
        value_parser = one_of::<LogFormat>(&LogFormat::NAMES)
    )]
    pub log_format: LogFormat,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the reconciler once on a parent from a file, with no cluster, and print what it wants (or,
    /// with --convert-to, the parent converted to another version).
    Render(RenderArgs),
    /// Run the controller against a cluster (in-cluster config or KUBECONFIG).
    Run(Box<RunArgs>),
    /// Run every reconciler declared by `Reconciler` and `ClusterReconciler` objects, started, changed
    /// and stopped live as those objects change (platform mode).
    Serve(Box<ServeArgs>),
    /// Check a reconciler against a directory of fixture cases (input + expected answer each), with no
    /// cluster; exits non-zero if any case fails.
    Conformance(ConformanceArgs),
    /// Show what a module would change on every live parent (server-side dry-run, writes nothing);
    /// exits 2 if any parent would fail, 3 with --fail-on-change if any would change.
    Plan(Box<PlanArgs>),
    /// Rewrite every object of a CRD at its storage version, then trim its status.storedVersions to
    /// it: the step after switching the storage version (e.g. MyApp v1alpha1 -> v1beta1).
    MigrateStorage(MigrateArgs),
    /// Publish a module to an OCI registry (`push MODULE.wasm oci://REGISTRY/REPOSITORY:TAG`) in the
    /// CNCF wasm OCI artifact format; prints the digest reference to run it by.
    Push(PushArgs),
    /// Compile the module on stdin, write the artifact to stdout: the child process in which the other
    /// commands compile (`guest::compile`).
    #[command(name = crate::guest::COMPILE_COMMAND, hide = true)]
    CompileModule(CompileModuleArgs),
}

#[cfg(test)]
mod tests;
