//! The flags of `migrate-storage`.

use clap::Args;

#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// The CRD whose objects to rewrite, e.g. `myapps.example.com`.
    #[arg(long)]
    pub crd: String,
}
