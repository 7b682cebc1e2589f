//! Command-line interface. Every flag of `run` has an environment variable too, so the same binary is
//! configured by a Deployment's `env` or by hand.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::guest::{ChildCompiler, Compiler, RuntimeConfig};
use crate::kind::Gvk;

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
        default_value = "text"
    )]
    pub log_format: LogFormat,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the reconciler once on a parent from a file, with no cluster, and print what it wants (or,
    /// with --convert-to, the parent converted to another version).
    Render(RenderArgs),
    /// Run the controller against a cluster (in-cluster config or KUBECONFIG).
    Run(Box<crate::controller::RunArgs>),
    /// Run every reconciler declared by `Reconciler` and `ClusterReconciler` objects, started, changed
    /// and stopped live as those objects change (platform mode).
    Serve(Box<crate::platform::ServeArgs>),
    /// Check a reconciler against a directory of fixture cases (input + expected answer each), with no
    /// cluster; exits non-zero if any case fails.
    Conformance(ConformanceArgs),
    /// Show what a module would change on every live parent (server-side dry-run, writes nothing);
    /// exits 2 if any parent would fail, 3 with --fail-on-change if any would change.
    Plan(Box<crate::plan::PlanArgs>),
    /// Rewrite every object of a CRD at its storage version, then trim its status.storedVersions to
    /// it: the step after switching the storage version (e.g. MyApp v1alpha1 -> v1beta1).
    MigrateStorage(crate::migrate::MigrateArgs),
    /// Publish a module to an OCI registry (`push MODULE.wasm oci://REGISTRY/REPOSITORY:TAG`) in the
    /// CNCF wasm OCI artifact format; prints the digest reference to run it by.
    Push(crate::source::oci::PushArgs),
    /// Compile the module on stdin, write the artifact to stdout: the child process in which the other
    /// commands compile (`guest::compile`).
    #[command(name = crate::guest::COMPILE_COMMAND, hide = true)]
    CompileModule(CompileModuleArgs),
}

#[derive(Debug, Args)]
pub struct CompileModuleArgs {
    /// Cap on the compiler's data, in MiB (0: none).
    #[arg(long, default_value_t = 0)]
    pub memory_mib: u64,
    /// Cap on the compiler's CPU time, in seconds (0: none).
    #[arg(long, default_value_t = 0)]
    pub cpu_seconds: u64,
}

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
    #[arg(long, short = 'o', default_value = "yaml")]
    pub output: OutputFormat,
    #[command(flatten)]
    pub runtime: RuntimeArgs,
}

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

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum OutputFormat {
    Yaml,
    Json,
}

/// Limits of each guest call, shared by `render`, `conformance` and `run`.
#[derive(Clone, Debug, Args)]
pub struct RuntimeArgs {
    /// Deadline of one guest call, in milliseconds.
    #[arg(long, env = "RECONCILE_HOST_GUEST_DEADLINE_MS", default_value_t = 1000)]
    pub guest_deadline_ms: u64,
    /// Memory cap of one guest instance, in MiB.
    #[arg(long, env = "RECONCILE_HOST_GUEST_MEMORY_MIB", default_value_t = 64)]
    pub guest_memory_mib: usize,
    /// Linear memory of all guest instances together, in MiB: calls wait for it, up to their deadline.
    /// Keep it plus the host's own memory (~100 MiB) under the container's memory limit.
    #[arg(
        long,
        env = "RECONCILE_HOST_GUEST_MEMORY_BUDGET_MIB",
        default_value_t = 256
    )]
    pub guest_memory_budget_mib: usize,
    /// Cap on what one guest call may return (children + status), in KiB.
    #[arg(
        long,
        env = "RECONCILE_HOST_GUEST_MAX_OUTPUT_KIB",
        default_value_t = 4096
    )]
    pub guest_max_output_kib: usize,
    /// Cap on the status one guest call may return, in KiB: refused before any API call, well inside
    /// what the API server takes for a whole object.
    #[arg(
        long,
        env = "RECONCILE_HOST_GUEST_MAX_STATUS_KIB",
        default_value_t = 64
    )]
    pub guest_max_status_kib: usize,
    /// Directory for compiled modules, so restarts skip compilation.
    #[arg(long, env = "RECONCILE_HOST_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Cap on the memory one module's compile may take, in MiB (0: none). Modules compile in a child
    /// process, which the out-of-memory killer picks first: a module too big to compile fails to
    /// load, the host keeps running. JavaScript and Python guests need about 450 MiB.
    #[arg(
        long,
        env = "RECONCILE_HOST_COMPILE_MEMORY_MIB",
        default_value_t = 1024
    )]
    pub compile_memory_mib: u64,
    /// Cap on the CPU time one module's compile may take, in seconds (0: none). A JavaScript or
    /// Python guest takes 12-15; a module that would keep the compiler busy longer fails to load.
    #[arg(
        long,
        env = "RECONCILE_HOST_COMPILE_CPU_SECONDS",
        default_value_t = 120
    )]
    pub compile_cpu_seconds: u64,
    /// Reuse an instance for this many calls (0: a fresh instance per call, the safe default).
    #[arg(long, env = "RECONCILE_HOST_REUSE_INSTANCE_CALLS", default_value_t = 0)]
    pub reuse_instance_calls: u32,
}

impl RuntimeArgs {
    pub fn config(&self) -> RuntimeConfig {
        RuntimeConfig::default()
            .deadline(Duration::from_millis(self.guest_deadline_ms))
            .memory_limit(self.guest_memory_mib << 20)
            .memory_budget(self.guest_memory_budget_mib << 20)
            .max_output_bytes(self.guest_max_output_kib << 10)
            .max_status_bytes(self.guest_max_status_kib << 10)
            .cache_dir(self.cache_dir.clone())
            .compiler(Compiler::ChildProcess(ChildCompiler::this_executable(
                self.compile_memory_mib,
                self.compile_cpu_seconds,
            )))
            .reuse_instance_calls(self.reuse_instance_calls)
    }
}
