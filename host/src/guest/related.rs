//! One `related` call: which objects a parent depends on, as the module's selectors. The same sandbox
//! as a reconcile (fresh or reused instance, the deadline, the memory cap, the output cap); checking
//! the selectors against the operator's allow-list is `crate::related`'s.

use super::bindings::Selector;
use super::error::GuestError;
use super::module::Module;

impl Module {
    /// The module's selectors for `parent` (JSON); none for a module without `related`.
    pub fn related(&self, tag: &str, parent: &str) -> Result<Vec<Selector>, GuestError> {
        if !self.relates() {
            return Ok(Vec::new());
        }
        let selectors = self.call_export(tag, |bindings, store| {
            bindings
                .related(store, parent)
                .expect("a module that relates has the related export")
        })?;
        let size: usize = selectors.iter().map(selector_size).sum();
        let limit = self.runtime.config.max_output_bytes;
        if size > limit {
            return Err(GuestError::OutputTooLarge { size, limit });
        }
        Ok(selectors)
    }
}

fn selector_size(selector: &Selector) -> usize {
    selector.api_version.len()
        + selector.kind.len()
        + selector.namespace.as_ref().map_or(0, String::len)
        + selector.names.iter().map(String::len).sum::<usize>()
        + selector.label_selector.as_ref().map_or(0, String::len)
}
