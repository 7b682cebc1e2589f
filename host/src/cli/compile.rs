//! The flags of `compile-module`, the hidden command in whose child process the others compile.

use clap::Args;

#[derive(Debug, Args)]
pub struct CompileModuleArgs {
    /// Cap on the compiler's data, in MiB (0: none).
    #[arg(long, default_value_t = 0)]
    pub memory_mib: u64,
    /// Cap on the compiler's CPU time, in seconds (0: none).
    #[arg(long, default_value_t = 0)]
    pub cpu_seconds: u64,
}
