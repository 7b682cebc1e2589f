//! Table tests of the decision: every reason it refuses an answer for, and what it plans otherwise.

use std::time::Duration;

use serde_json::json;

use super::fixtures::{
    PARENT_UID, answer, cached, configmap, desired, parent, placement, rules, selector,
};
use super::ownership::Claim;
use super::plan::{HostRules, plan};
use super::related::checked_selection;
use crate::guest::{Answer, GuestError};
use crate::identity::Identity;

fn host<'a>(rules: &'a crate::validate::Rules, identity: &'a Identity) -> HostRules<'a> {
    HostRules {
        placement: placement(),
        rules,
        identity,
        adopt_orphans: false,
        cluster_scoped: false,
        decorates: false,
        finalizer: None,
        updates: &[],
        now: k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        member: None,
    }
}

/// The claims planned for `answer`'s children (creations first), or the refusal's reason.
fn decided(
    children: &[(&str, Option<&str>)],
    answer: &Answer,
    adopt_orphans: bool,
) -> Result<Vec<(String, Claim)>, &'static str> {
    let kinds = cached(children);
    let observed = kinds.observe(PARENT_UID);
    let (rules, identity) = (rules(), Identity::new("myapp"));
    let host = HostRules {
        adopt_orphans,
        ..host(&rules, &identity)
    };
    let parent = parent(&[]);
    let planned = plan(&parent, &observed, answer, false, &host, |c| {
        kinds.cached(&c.name)
    });
    planned
        .map(|plan| {
            (plan.writes.iter())
                .map(|w| (w.id.clone(), w.claim.clone()))
                .collect()
        })
        .map_err(|e| e.reason())
}

#[test]
fn each_child_is_claimed_or_the_answer_refused_with_its_reason() {
    const OTHER: Option<&str> = Some("other-uid");
    const MINE: Option<&str> = Some(PARENT_UID);
    let adopt = Claim::Adopt {
        resource_version: "7".into(),
    };
    let one = |name: &str| answer(vec![desired(name)]);
    /// A case: its name, the cached objects (name, controller UID), the answer, adopt-orphans, and
    /// the claims or the refusal's reason.
    type Case<'a> = (
        &'a str,
        &'a [(&'a str, Option<&'a str>)],
        Answer,
        bool,
        Result<Vec<(String, Claim)>, &'a str>,
    );
    #[rustfmt::skip]
    let table: Vec<Case> = vec![
        ("nothing cached: create-only", &[], one("a"), false,
            Ok(vec![("ConfigMap/a".into(), Claim::Create)])),
        ("the parent controls it: apply", &[("a", MINE)], one("a"), false,
            Ok(vec![("ConfigMap/a".into(), Claim::Apply)])),
        ("another parent controls it", &[("a", OTHER)], one("a"), false, Err("ChildOwnedByOther")),
        ("nothing controls it", &[("a", None)], one("a"), false, Err("ChildExists")),
        ("nothing controls it, adoption allowed", &[("a", None)], one("a"), true,
            Ok(vec![("ConfigMap/a".into(), adopt)])),
        ("one refused child refuses all", &[("b", OTHER)], answer(vec![desired("a"), desired("b")]),
            false, Err("ChildOwnedByOther")),
        ("a kind not allowed", &[], answer(vec![json!({"apiVersion": "apps/v1",
            "kind": "Deployment", "metadata": {"name": "d"}})]), false, Err("InvalidGuestOutput")),
        ("another namespace", &[], answer(vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "elsewhere"}})]), false, Err("InvalidGuestOutput")),
        ("no name", &[], answer(vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {}})]), false, Err("InvalidGuestOutput")),
        ("creations first", &[("b", MINE)], answer(vec![desired("b"), desired("a")]), false,
            Ok(vec![("ConfigMap/a".into(), Claim::Create), ("ConfigMap/b".into(), Claim::Apply)])),
    ];
    for (case, children, answer, adopt_orphans, expected) in table {
        assert_eq!(
            decided(children, &answer, adopt_orphans),
            expected,
            "{case}"
        );
    }
}

#[test]
fn a_parent_without_uid_or_kind_is_refused_as_invalid() {
    let (rules, identity) = (rules(), Identity::new("myapp"));
    let host = host(&rules, &identity);
    let answer = answer(vec![desired("a")]);
    let mut no_uid = parent(&[]);
    no_uid.metadata.uid = None;
    let mut no_kind = parent(&[]);
    no_kind.types = None;
    for (case, parent) in [("no uid", no_uid), ("no kind", no_kind)] {
        let refused = plan(&parent, &[], &answer, false, &host, |_| None).unwrap_err();
        assert_eq!(refused.reason(), "InvalidParent", "{case}");
    }
}

#[test]
fn what_the_answer_leaves_out_is_pruned_and_the_rest_planned() {
    let kinds = cached(&[("keep", Some(PARENT_UID)), ("drop", Some(PARENT_UID))]);
    let observed = kinds.observe(PARENT_UID);
    let (rules, identity) = (rules(), Identity::new("myapp"));
    let parent = parent(&["example.com/f"]);
    let mut answer = answer(vec![desired("keep")]);
    answer.status = json!({"phase": "Ready"}).as_object().cloned();
    answer.requeue_after = Some(Duration::from_secs(5));
    answer.finalized = true;
    let host = HostRules {
        finalizer: Some("example.com/f"),
        ..host(&rules, &identity)
    };
    let planned = plan(&parent, &observed, &answer, false, &host, |_| None).unwrap();
    let pruned: Vec<_> = planned.prunes.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(pruned, ["ConfigMap/drop"]);
    let write = &planned.writes[0];
    assert_eq!(
        write.observed.as_ref().unwrap().metadata.name.as_deref(),
        Some("keep")
    );
    let owner = &write.body["metadata"]["ownerReferences"][0];
    assert_eq!(
        (owner["uid"].as_str(), owner["controller"].as_bool()),
        (Some(PARENT_UID), Some(true))
    );
    assert_eq!(planned.status.unwrap().guest_status, answer.status);
    assert_eq!(planned.requeue, Some(Duration::from_secs(5)));
    assert_eq!(
        planned.remove_finalizer, None,
        "finalized, but not finalizing"
    );

    let finalizing = plan(&parent, &observed, &answer, true, &host, |_| None).unwrap();
    assert_eq!(
        finalizing.remove_finalizer.as_deref(),
        Some("example.com/f")
    );
    answer.finalized = false;
    let not_done = plan(&parent, &observed, &answer, true, &host, |_| None).unwrap();
    assert_eq!(not_done.remove_finalizer, None, "finalizing, not finalized");
}

#[test]
fn a_decorated_parent_gets_no_status() {
    let (rules, identity) = (rules(), Identity::new("myapp"));
    let host = HostRules {
        decorates: true,
        ..host(&rules, &identity)
    };
    let planned = plan(&parent(&[]), &[], &answer(vec![]), false, &host, |_| None).unwrap();
    assert!(planned.status.is_none());
    assert!(planned.writes.is_empty() && planned.prunes.is_empty());
}

#[test]
fn a_cluster_scoped_parents_children_are_named_with_their_namespace() {
    let (rules, identity) = (rules(), Identity::new("myapp"));
    let host = HostRules {
        cluster_scoped: true,
        ..host(&rules, &identity)
    };
    let planned = plan(
        &parent(&[]),
        &[],
        &answer(vec![desired("a")]),
        false,
        &host,
        |_| None,
    );
    assert_eq!(planned.unwrap().writes[0].id, "ConfigMap/ns/a");
}

#[test]
fn a_related_selection_is_refused_with_its_reason() {
    let allowed = ["v1/ConfigMap".parse().unwrap()];
    let failed = GuestError::InvalidJson {
        what: "related".into(),
        reason: "x".into(),
    };
    #[rustfmt::skip]
    let table = [
        ("allowed, own namespace", Ok(vec![selector("v1", "ConfigMap", None)]), None),
        ("the related call failed", Err(failed), Some("GuestRelatedFailed")),
        ("a kind not allowed", Ok(vec![selector("v1", "Secret", None)]), Some("RelatedNotAllowed")),
        ("another namespace", Ok(vec![selector("v1", "ConfigMap", Some("other"))]),
            Some("RelatedNotAllowed")),
        ("not a kind", Ok(vec![selector("", "", None)]), Some("RelatedInvalid")),
    ];
    for (case, answer, expected) in table {
        let checked = checked_selection(answer, &placement(), &allowed);
        assert_eq!(checked.err().map(|e| e.reason()), expected, "{case}");
    }
}

#[test]
fn the_ownership_rule_alone_names_the_controller() {
    let refused =
        super::ownership::claim(PARENT_UID, "ConfigMap/a", &configmap("a", Some("x")), false);
    let message = refused.unwrap_err().to_string();
    assert!(message.contains("MyApp/other (uid x)"), "{message}");
}
