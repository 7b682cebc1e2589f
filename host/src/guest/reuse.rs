//! Opt-in instance reuse. A fresh instance per call is the default because nothing can leak between
//! parents; JS and Python guests cost 1-2 ms to instantiate, so they may trade that isolation for speed.

use wasmtime::Store;

use super::bindings::Bindings;
use super::call::finish;
use super::error::GuestError;
use super::module::Module;
use super::state::GuestState;
use super::warm::WarmInstance;

impl Module {
    pub(crate) fn call_reused<T>(
        &self,
        tag: &str,
        call: impl FnOnce(&Bindings, &mut Store<GuestState>) -> wasmtime::Result<Result<T, String>>,
    ) -> Result<T, GuestError> {
        let warm = self.warm.lock().expect("warm pool poisoned").pop();
        let mut warm = match warm {
            Some(mut warm) => {
                let deadline = self.runtime.config.deadline;
                warm.store.data_mut().retag(tag.to_string(), deadline);
                warm.store.set_epoch_deadline(self.runtime.deadline_ticks());
                warm
            }
            None => {
                let mut store = self.new_store(tag.to_string());
                let bindings = self
                    .linked
                    .instantiate(&mut store)
                    .map_err(|e| GuestError::Instantiate(format!("{e:#}")))?;
                WarmInstance {
                    store,
                    bindings,
                    calls: 0,
                }
            }
        };
        let result = call(&warm.bindings, &mut warm.store);
        let result = finish(&mut warm.store, self.runtime.config.deadline, result);
        warm.calls += 1;
        // A trapped instance may be in any state: drop it. A guest error string is a normal answer.
        let healthy = !matches!(
            result,
            Err(GuestError::Trap { .. }
                | GuestError::Deadline(_)
                | GuestError::MemoryLimit { .. }
                | GuestError::MemoryBudget { .. })
        );
        if healthy && warm.calls < self.runtime.config.reuse_instance_calls {
            self.warm.lock().expect("warm pool poisoned").push(warm);
        }
        result
    }
}
