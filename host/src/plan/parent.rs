//! The plan for one parent: the controller's decisions, carried out by a dry-run executor that asks the
//! API server for every write in dry-run mode instead, and reports what would be created, changed,
//! deleted and written to the status.

use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::core::DynamicObject;
use serde::Serialize;
use serde_json::Value;

use crate::controller::{
    Claim, Context, MANAGER, Observed, ReconcileError, Released, Start, guest_part, parent_key,
    plan as decide, released, start, status_of, uid_of,
};
use crate::guest::Answer;
use crate::validate::Child;

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
    /// Outdated children their kind's update strategy would delete, to create them anew.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub recreated: Vec<String>,
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
            recreated: Vec::new(),
            status: None,
            error: None,
        }
    }
}

/// Plans `parent` on the context's caches, filled as the controller's (`fill_caches`). `None` for a
/// parent the host would not touch: one that `--parent-selector` does not take and that controls
/// nothing carrying the reconciler's identity.
///
/// The dry-run executor: the decisions are the controller's (`controller::start`, `controller::plan`,
/// `controller::released`); only carrying them out differs, every write asked in dry-run mode.
pub async fn plan_parent(ctx: &Context, parent: &DynamicObject) -> Option<ParentPlan> {
    let namespace = parent.metadata.namespace.as_deref();
    let mut plan = ParentPlan::new(parent_key(parent));
    if parent.metadata.deletion_timestamp.is_some() {
        plan.verdict = Verdict::Deleting;
        return Some(plan);
    }
    let uid = parent.metadata.uid.clone().unwrap_or_default();
    let selects = ctx.selects(parent);
    // What the controller observes: its own and the legacy children of a parent it selects, only
    // its own of one it releases.
    let observed = match selects {
        true => ctx.observe(namespace, &uid),
        false => ctx.observe_own(namespace, &uid),
    };
    let planned = match start(parent, selects, ctx.finalizer.as_deref()) {
        Start::Release if observed.is_empty() => return None,
        Start::Release => release(&mut plan, ctx, parent, &observed).await,
        // A parent without the finalizer yet is planned as the reconcile after it is added.
        Start::AddFinalizer(_) | Start::Call { .. } => {
            fill(&mut plan, ctx, parent, &observed).await
        }
        Start::AwaitGarbageCollection => {
            plan.verdict = Verdict::Deleting;
            return Some(plan);
        }
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
        || !plan.recreated.is_empty()
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
    let answer = answer(ctx, &plan.parent, parent, observed, true).await?;
    let held = None;
    if let Released::Done { prunes, .. } = released(&answer, observed, held, ctx.cluster_scoped) {
        plan.deleted = prunes.into_iter().map(|prune| prune.id).collect();
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

/// The controller's plan of the module's answer, carried out in dry-run mode: each write asked of
/// the API server with `dryRun`, each deletion and the guest's status reported.
async fn fill(
    plan: &mut ParentPlan,
    ctx: &Context,
    parent: &DynamicObject,
    observed: &[Observed<'_>],
) -> Result<(), ReconcileError> {
    let answer = answer(ctx, &plan.parent, parent, observed, false).await?;
    let rules = ctx.host_rules(parent);
    let decided = decide(parent, observed, &answer, false, &rules, |c| ctx.cached(c))?;
    let uid = uid_of(parent)?;

    let dry_run = PatchParams::apply(MANAGER).force().dry_run();
    // The report lists the children in the answer's order; the controller creates first.
    let mut writes: Vec<_> = decided.writes.iter().collect();
    writes.sort_by_key(|write| write.child);
    for write in writes {
        let child = decided.child(write);
        let api = ctx.api(&ctx.child_kind(child).kind, child.namespace());
        let failed = |source| ReconcileError::Apply {
            child: write.id.clone(),
            source,
        };
        // The child as it is now, not as listed: the cluster's controllers keep writing to it.
        let before = match write.observed.is_some() {
            true => api.get_opt(&child.name).await.map_err(failed)?,
            false => None,
        };
        let created = match write.claim {
            // As the controller writes it: create-only, deciding on what a taken name holds.
            Claim::Create => dry_run_create(ctx, &api, uid, child, &write.body).await?,
            Claim::Apply | Claim::Adopt { .. } => None,
        };
        let after = match created {
            Some(created) => created,
            None => api
                .patch(&child.name, &dry_run, &Patch::Apply(&write.body))
                .await
                .map_err(failed)?,
        };
        match before {
            None => plan.created.push(as_compared(&after)),
            Some(before) => {
                let patch = json_patch::diff(&as_compared(&before), &as_compared(&after));
                if !patch.0.is_empty() {
                    let child = write.id.clone();
                    plan.changed.push(ChildChange { child, patch });
                }
            }
        }
    }
    let (recreated, deleted): (Vec<_>, Vec<_>) =
        decided.prunes.iter().partition(|prune| prune.recreate);
    plan.deleted = deleted.into_iter().map(|prune| prune.id.clone()).collect();
    plan.recreated = recreated
        .into_iter()
        .map(|prune| prune.id.clone())
        .collect();

    // A decorated kind's status is not the host's to write (see `--parent-selector`): no status then.
    let status = decided.status.as_ref();
    if let Some(status) = status.and_then(|status| status.guest_status.as_ref()) {
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
