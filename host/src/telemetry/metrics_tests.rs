//! The metrics as Prometheus reads them.

use super::*;

#[test]
fn exports_controller_runtime_names_and_guest_figures() {
    let metrics = Metrics::new("myapp");
    drop(metrics.reconcile_started());
    metrics.reconcile_finished("success");
    metrics.reconcile_finished("error");
    metrics.guest_call(Duration::from_micros(40), Some("GuestTrapped"));
    metrics.module_loaded("sha256:aaa", true);
    metrics.module_loaded("sha256:bbb", true);
    metrics.module_loaded("sha256:ccc", false);
    let text = metrics.encode();
    for expected in [
        r#"controller_runtime_reconcile_total{controller="myapp",result="success"} 1"#,
        r#"controller_runtime_reconcile_errors_total{controller="myapp"} 1"#,
        r#"controller_runtime_active_workers{controller="myapp"} 0"#,
        r#"controller_runtime_reconcile_time_seconds_count{controller="myapp"} 1"#,
        r#"reconcile_host_guest_failures_total{controller="myapp",reason="GuestTrapped"} 1"#,
        r#"reconcile_host_module_loads_total{controller="myapp",digest="sha256:ccc",result="refused"} 1"#,
        r#"reconcile_host_active_module{controller="myapp",digest="sha256:bbb"} 1"#,
    ] {
        assert!(text.contains(expected), "missing {expected} in:\n{text}");
    }
    assert!(
        !text.contains(r#"digest="sha256:aaa"} 1"#),
        "the old module is still active:\n{text}"
    );
}

#[test]
fn controllers_share_a_registry_and_keep_their_own_series() {
    let team_a = Metrics::new("team-a/myapp");
    let team_b = team_a.for_controller("team-b/website");
    team_a.module_loaded("sha256:aaa", true);
    team_b.module_loaded("sha256:bbb", true);
    team_b.reconcile_finished("error");
    let text = team_a.encode();
    assert!(
        text.contains(
            r#"reconcile_host_active_module{controller="team-a/myapp",digest="sha256:aaa"} 1"#
        ),
        "{text}"
    );
    assert!(
        text.contains(
            r#"controller_runtime_reconcile_errors_total{controller="team-b/website"} 1"#
        ),
        "{text}"
    );
    assert!(
        !text.contains(r#"controller_runtime_reconcile_errors_total{controller="team-a/myapp"}"#),
        "{text}"
    );

    team_b.remove_controller();
    let text = team_a.encode();
    assert!(
        !text.contains(r#"reconcile_host_active_module{controller="team-b/website""#),
        "{text}"
    );
    assert!(
        text.contains(r#"controller="team-a/myapp",digest="sha256:aaa"} 1"#),
        "{text}"
    );
}

#[test]
fn alert_inputs_follow_the_controller_state() {
    let metrics = Metrics::new("myapp");
    metrics.max_concurrent_reconciles(16);
    metrics.leading(false);
    metrics.module_loaded("sha256:bad", false);
    let failing = Arc::new(std::sync::atomic::AtomicUsize::new(2));
    let count = failing.clone();
    metrics.count_failing_parents(Box::new(move || {
        count.load(std::sync::atomic::Ordering::Relaxed)
    }));
    let text = metrics.encode();
    for expected in [
        r#"controller_runtime_max_concurrent_reconciles{controller="myapp"} 16"#,
        "reconcile_host_leader 0",
        r#"reconcile_host_module_refused{controller="myapp"} 1"#,
        r#"reconcile_host_module_unavailable{controller="myapp"} 0"#,
        r#"reconcile_host_failing_parents{controller="myapp"} 2"#,
    ] {
        assert!(text.contains(expected), "missing {expected} in:\n{text}");
    }

    // A source that fails (a registry down) while the last good module serves.
    metrics.module_source(false);
    let text = metrics.encode();
    let unavailable = r#"reconcile_host_module_unavailable{controller="myapp"} 1"#;
    assert!(
        text.contains(unavailable),
        "missing {unavailable} in:\n{text}"
    );

    // A good module clears the refusal and the unavailability; the failing count is taken again at
    // each scrape.
    metrics.leading(true);
    metrics.module_loaded("sha256:good", true);
    failing.store(0, std::sync::atomic::Ordering::Relaxed);
    let text = metrics.encode();
    for expected in [
        "reconcile_host_leader 1",
        r#"reconcile_host_module_refused{controller="myapp"} 0"#,
        r#"reconcile_host_module_unavailable{controller="myapp"} 0"#,
        r#"reconcile_host_failing_parents{controller="myapp"} 0"#,
    ] {
        assert!(text.contains(expected), "missing {expected} in:\n{text}");
    }

    metrics.remove_controller();
    let text = metrics.encode();
    for gone in [
        r#"failing_parents{controller="myapp"}"#,
        r#"module_unavailable{controller="myapp"}"#,
    ] {
        assert!(!text.contains(gone), "{text}");
    }
}
