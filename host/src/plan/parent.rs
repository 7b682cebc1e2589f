//! The plan for one parent: the controller's reconcile up to the point where it would write, with
//! every write asked of the API server in dry-run mode instead.

use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::core::DynamicObject;
use serde::Serialize;
use serde_json::Value;

use crate::controller::{
    Claim, Context, MANAGER, Observed, ReconcileError, apply_body, guest_part, left_out,
    owner_reference, parent_key, status_of,
};
use crate::guest::Answer;
use crate::validate::{Child, validate_in};

/// What applying the module's answer would do to one parent.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ParentPlan {
    /// `namespace/name`, or `name` for a cluster-scoped parent.
    pub parent: String,
    pub verdict: Verdict,
    /// Children that do not exist yet, as the API server would store them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub created: Vec<Value>,
    /// Children that would change: `Kind/name` and the JSON Patch from the live object to the new one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<ChildChange>,
    /// Children the parent controls that the answer leaves out: they would be deleted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deleted: Vec<String>,
    /// The JSON Patch from the guest's part of the live status to the new one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<json_patch::Patch>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<PlanError>,
}

#[derive(Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Verdict {
    Unchanged,
    Changed,
    /// The reconcile would fail: nothing of it would be applied.
    Failing,
    /// Being deleted: not planned.
    Deleting,
}

#[derive(Debug, Serialize)]
pub struct ChildChange {
    pub child: String,
    pub patch: json_patch::Patch,
}

/// Why the reconcile would fail, as the parent's `Ready` condition would say.
#[derive(Debug, Serialize)]
pub struct PlanError {
    pub reason: &'static str,
    pub message: String,
}

impl ParentPlan {
    fn new(parent: String) -> ParentPlan {
        ParentPlan {
            parent,
            verdict: Verdict::Unchanged,
            created: Vec::new(),
            changed: Vec::new(),
            deleted: Vec::new(),
            status: None,
            error: None,
        }
    }
}

/// Plans `parent` on the context's caches, filled as the controller's (`fill_caches`). `None` for a
/// parent the host would not touch: one that `--parent-selector` does not take and that controls
/// nothing carrying the reconciler's identity.
pub async fn plan_parent(ctx: &Context, parent: &DynamicObject) -> Option<ParentPlan> {
    let namespace = parent.metadata.namespace.as_deref();
    let mut plan = ParentPlan::new(parent_key(parent));
    if parent.metadata.deletion_timestamp.is_some() {
        plan.verdict = Verdict::Deleting;
        return Some(plan);
    }
    let uid = parent.metadata.uid.clone().unwrap_or_default();
    let selects = ctx.selection.selects(parent);
    // What the controller observes: its own and the legacy children of a parent it selects, only
    // its own of one it releases.
    let observed = match selects {
        true => ctx.observe(namespace, &uid),
        false => ctx.observe_own(namespace, &uid),
    };
    let planned = match selects {
        true => fill(&mut plan, ctx, parent, &observed).await,
        false if observed.is_empty() => return None,
        false => release(&mut plan, ctx, parent, &observed).await,
    };
    if let Err(e) = planned {
        plan.verdict = Verdict::Failing;
        plan.error = Some(PlanError {
            reason: e.reason(),
            message: e.to_string(),
        });
        return Some(plan);
    }
    let changes = !plan.created.is_empty()
        || !plan.changed.is_empty()
        || !plan.deleted.is_empty()
        || plan.status.is_some();
    if changes {
        plan.verdict = Verdict::Changed;
    }
    Some(plan)
}

/// A decorated parent that `--parent-selector` no longer takes: the host would call the module to
/// finalize, then, once it has, delete every child the parent controls (`controller::release`).
async fn release(
    plan: &mut ParentPlan,
    ctx: &Context,
    parent: &DynamicObject,
    observed: &[Observed<'_>],
) -> Result<(), ReconcileError> {
    if answer(ctx, &plan.parent, parent, observed, true)
        .await?
        .finalized
    {
        plan.deleted = observed.iter().map(|o| ctx.observed_id(o)).collect();
    }
    Ok(())
}

/// The module's answer for `parent` (`key`), on the request the controller would build.
async fn answer(
    ctx: &Context,
    key: &str,
    parent: &DynamicObject,
    observed: &[Observed<'_>],
    finalizing: bool,
) -> Result<Answer, ReconcileError> {
    let module = ctx.module();
    let request = ctx
        .request_with_related(parent, key, observed, finalizing, &module)
        .await?;
    Ok(module.call(key, &request)?)
}

async fn fill(
    plan: &mut ParentPlan,
    ctx: &Context,
    parent: &DynamicObject,
    observed: &[Observed<'_>],
) -> Result<(), ReconcileError> {
    let answer = answer(ctx, &plan.parent, parent, observed, false).await?;
    let desired = validate_in(&answer, &ctx.placement(parent), &ctx.rules)?;
    let owner = owner_reference(parent)?;
    let uid = owner["uid"].as_str().unwrap_or_default();
    let claims = ctx.claim_children(uid, &desired, observed)?;

    let dry_run = PatchParams::apply(MANAGER).force().dry_run();
    for (child, claim) in desired.iter().zip(claims) {
        let id = ctx.child_id(child);
        let api = ctx.api(&ctx.child_kind(child).kind, child.namespace());
        let failed = |source| ReconcileError::Apply {
            child: id.clone(),
            source,
        };
        // The child as it is now, not as listed: the cluster's controllers keep writing to it.
        let before = match observed.iter().any(|o| o.is(child)) {
            true => api.get_opt(&child.name).await.map_err(failed)?,
            false => None,
        };
        let body = apply_body(&owner, child, &ctx.identity);
        let created = match claim {
            // As the controller writes it: create-only, deciding on what a taken name holds.
            Claim::Create => dry_run_create(ctx, &api, uid, child, &body).await?,
            Claim::Apply | Claim::Adopt { .. } => None,
        };
        let after = match created {
            Some(created) => created,
            None => api
                .patch(&child.name, &dry_run, &Patch::Apply(body))
                .await
                .map_err(failed)?,
        };
        match before {
            None => plan.created.push(as_compared(&after)),
            Some(before) => {
                let patch = json_patch::diff(&as_compared(&before), &as_compared(&after));
                if !patch.0.is_empty() {
                    plan.changed.push(ChildChange { child: id, patch });
                }
            }
        }
    }
    plan.deleted = left_out(observed, &desired)
        .map(|o| ctx.observed_id(o))
        .collect();

    // A decorated kind's status is not the host's to write (see `--parent-selector`).
    if let Some(status) = answer
        .status
        .as_ref()
        .filter(|_| !ctx.selection.decorates())
    {
        let before = Value::Object(guest_part(&status_of(parent)));
        let patch = json_patch::diff(&before, &Value::Object(guest_part(status)));
        plan.status = (!patch.0.is_empty()).then_some(patch);
    }
    Ok(())
}

/// The create-only write of `child` in dry-run: the object it would make, or `None` when the name is
/// taken by an object the parent may write (the controller then applies), or the refusal it would
/// meet (`ChildOwnedByOther`, `ChildExists`).
async fn dry_run_create(
    ctx: &Context,
    api: &Api<DynamicObject>,
    uid: &str,
    child: &Child,
    body: &Value,
) -> Result<Option<DynamicObject>, ReconcileError> {
    let failed = |source| ReconcileError::Create {
        child: ctx.child_id(child),
        source,
    };
    let object: DynamicObject =
        serde_json::from_value(body.clone()).map_err(|e| failed(kube::Error::SerdeError(e)))?;
    let params = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    match api.create(&params, &object).await {
        Ok(created) => Ok(Some(created)),
        Err(kube::Error::Api(status)) if status.is_already_exists() => {
            match ctx.claim_existing(uid, child).await? {
                Some(_) => Ok(None),
                None => Err(failed(kube::Error::Api(status))),
            }
        }
        Err(source) => Err(failed(source)),
    }
}

/// An object as compared: without what every write changes (resourceVersion, generation, the
/// managedFields timestamps) and without its status (an apply never writes it), so that a diff shows
/// only what the apply would change.
fn as_compared(object: &DynamicObject) -> Value {
    let mut value = serde_json::to_value(object).expect("objects serialize");
    if let Some(fields) = value.as_object_mut() {
        fields.remove("status");
    }
    if let Some(metadata) = value["metadata"].as_object_mut() {
        for key in ["managedFields", "resourceVersion", "generation"] {
            metadata.remove(key);
        }
    }
    value
}
