//! Decide: what a reconcile does, as pure functions of what it observed, the guest's answer and the
//! host's rules, with no API server. Before the guest (`start`): release, add the finalizer, wait for
//! garbage collection, or call the guest. After its answer (`plan`): the [`plan::Plan`] of writes (each
//! child with its claim: `ownership`; its body: `write`; held back or recreated by its kind's update
//! strategy: `update`), deletions, status (`status`), finalizer
//! removal and requeue, or the refusal. Also the checked related selection (`related`) and the shadow
//! verdict (`shadow`). The controller (`execute::live`) and `plan` (dry run) carry out the same plan.
//!
//! Every reason of `ReconcileError::reason()`, and where it arises:
//!
//! | Reason | Where | Tested |
//! |---|---|---|
//! | `InvalidGuestOutput` | decision: `plan` (`validate_in`) | `decide::tests` |
//! | `ChildOwnedByOther` | decision: `plan` (cached object); executor: the 409 path of a create | `decide::tests`; `e2e_controller/ownership.rs` |
//! | `ChildExists` | decision: `plan` (cached object); executor: the 409 path of a create | `decide::tests`; `e2e_controller/ownership.rs` |
//! | `InvalidParent` | decision: `plan` (no uid, apiVersion/kind) | `decide::tests` |
//! | `RelatedNotAllowed`, `RelatedInvalid` | decision: `related` (`crate::related::check`) | `decide::tests`, `related::selector` |
//! | `GuestRelatedFailed` | decision: `related` (the `related` call failed) | `decide::tests` |
//! | `Guest*` (`GuestError::reason`) | guest stage: the reconcile call | `guest` tests, e2e |
//! | `GuestCallCancelled` | guest stage: the blocking task was cancelled (a runtime shutting down) | not tested: no test can cancel a blocking task on demand |
//! | `CreateFailed` | executor: the API server refused a create-only POST | `e2e_platform/platform_isolation.rs`, `e2e_operations/deploy_rbac.rs` |
//! | `ChildLookupFailed` | executor: reading the object a 409 found | `e2e_operations/deploy_rbac.rs` |
//! | `ApplyFailed` | executor: the API server refused an apply (an adoption's precondition) | `e2e_operations/deploy_rbac.rs`, `e2e_controller/plan.rs` |
//! | `PruneFailed` | executor: the API server refused a deletion | `e2e_operations/deploy_rbac.rs` |
//! | `ParentUpdateFailed` | executor: a status or finalizer patch was refused | `e2e_operations/deploy_rbac.rs` |

#[cfg(test)]
mod fixtures;
pub mod ownership;
pub mod plan;
pub mod related;
pub mod shadow;
pub mod start;
pub mod status;
#[cfg(test)]
mod tests;
pub mod update;
pub mod write;
