//! The flags of `push`, turned into its [`PushOptions`].

use std::path::PathBuf;

use clap::Args;

use super::{CredentialsArgs, TransportArgs};
use crate::source::oci::{OciReference, PushOptions};

#[derive(Debug, Args)]
pub struct PushArgs {
    /// The component (.wasm).
    pub module: PathBuf,
    /// Where to, `oci://REGISTRY/REPOSITORY:TAG`.
    pub reference: OciReference,
    #[command(flatten)]
    pub transport: TransportArgs,
    #[command(flatten)]
    pub credentials: CredentialsArgs,
}

impl PushArgs {
    pub fn options(&self) -> PushOptions {
        PushOptions {
            module: self.module.clone(),
            reference: self.reference.clone(),
            transport: self.transport.transport(),
            credentials: self.credentials.credentials(),
        }
    }
}
