//! Execute: carrying a decision out against the API server (`live`; `plan` has the dry-run
//! executor): create-only writes (`create`), forced server-side applies and deletions (`apply`), the
//! status subresource (`status`), Events (`events`), the finalizer (`finalizer`), the shadow call
//! (`shadow`), and the executor's memories of its own writes (`applied`, `written_status`).

pub mod applied;
pub mod apply;
pub mod create;
mod events;
mod finalizer;
mod live;
mod shadow;
mod status;
pub mod written_status;
