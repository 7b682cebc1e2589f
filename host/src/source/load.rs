//! Loading one version of a module from its source, and what can go wrong with it: the one place that
//! decides whether a version is usable, for the first version and for every later one, in `run` and in
//! `serve` alike, so that both name a failure the same way.

use std::sync::Arc;

use super::Update;
use crate::guest::{Module, Runtime};

/// What went wrong with a module version (while an older one, if any, keeps serving).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ModuleProblem {
    /// The source gave a version that does not load (not a component, the wrong world).
    #[error("{0}")]
    Refused(String),
    /// The source gave nothing (a registry that does not answer, credentials that cannot be read).
    #[error("{0}")]
    Unavailable(String),
}

impl ModuleProblem {
    pub fn message(&self) -> &str {
        match self {
            ModuleProblem::Refused(message) | ModuleProblem::Unavailable(message) => message,
        }
    }

    /// The reason a status condition or an Event gives for it.
    pub fn reason(&self) -> &'static str {
        match self {
            ModuleProblem::Refused(_) => "ModuleRefused",
            ModuleProblem::Unavailable(_) => "ModuleUnavailable",
        }
    }
}

/// Compiles the version `update` delivered, off the async workers (compiling takes up to seconds).
pub async fn load(runtime: &Arc<Runtime>, update: Update) -> Result<Arc<Module>, ModuleProblem> {
    let bytes = update.map_err(ModuleProblem::Unavailable)?;
    let runtime = runtime.clone();
    match tokio::task::spawn_blocking(move || Module::load(&runtime, &bytes)).await {
        Ok(loaded) => loaded.map_err(|e| ModuleProblem::Refused(e.to_string())),
        Err(e) => Err(ModuleProblem::Refused(format!(
            "loading the module panicked: {e}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guest::RuntimeConfig;

    fn runtime() -> Arc<Runtime> {
        Runtime::new(RuntimeConfig::default().max_instances(1)).unwrap()
    }

    #[tokio::test]
    async fn a_source_that_gives_nothing_is_unavailable_and_bytes_that_do_not_load_are_refused() {
        let runtime = runtime();
        let unavailable = load(&runtime, Err("registry down".into()))
            .await
            .err()
            .unwrap();
        assert_eq!(
            unavailable,
            ModuleProblem::Unavailable("registry down".into())
        );
        assert_eq!(unavailable.reason(), "ModuleUnavailable");
        let refused = load(&runtime, Ok(b"not wasm".to_vec()))
            .await
            .err()
            .unwrap();
        assert!(matches!(refused, ModuleProblem::Refused(_)), "{refused:?}");
        assert_eq!(refused.reason(), "ModuleRefused");
    }
}
