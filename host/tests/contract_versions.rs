//! Every contract version the host serves, through the runtime: a component built against 0.1.0 runs
//! unchanged beside 0.2.0 ones, `convert` runs in the same sandbox as `reconcile` (its failures are
//! the same clear errors, and the next call works), and so does `related`, which a module without it
//! answers with no selectors.

mod common;

use std::sync::Arc;
use std::time::Duration;

use reconcile_host::guest::{GuestError, Module, Request, Runtime, RuntimeConfig};
use serde_json::{Value, json};

use common::guests::component;

fn load(guest: &str) -> Arc<Module> {
    let config = RuntimeConfig::default()
        .deadline(Duration::from_millis(300))
        .memory_limit(32 << 20);
    Module::load_file(&Runtime::new(config).unwrap(), &component(guest)).unwrap()
}

fn myapp_v1alpha1() -> Value {
    json!({
        "apiVersion": "example.com/v1alpha1", "kind": "MyApp",
        "metadata": {"name": "demo-app", "namespace": "default", "uid": "u-1"},
        "spec": {"replicas": 2, "image": "nginx:1.27"}
    })
}

#[test]
fn a_component_built_against_0_1_0_is_served_as_before_and_cannot_convert() {
    let website = load("guest_website");
    assert_eq!(website.world(), "reconcile:guest/reconciler@0.1.0");
    assert!(!website.converts());
    let parent = json!({
        "apiVersion": "example.com/v1alpha1", "kind": "Website",
        "metadata": {"name": "docs", "namespace": "team-b", "uid": "u-2"},
        "spec": {"title": "Docs", "html": "<h1>Docs</h1>"}
    });
    let answer = website
        .call("team-b/docs", &Request::for_parent(&parent))
        .unwrap();
    let kinds: Vec<_> = answer
        .children
        .iter()
        .map(|child| child["kind"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kinds, ["ConfigMap", "Deployment", "Service"]);
    assert_eq!(answer.status.unwrap()["phase"], "Pending");

    let err = website.convert(&parent, "example.com/v1beta1").unwrap_err();
    assert!(matches!(err, GuestError::NoConvert { .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("reconcile:guest/reconciler@0.1.0")
            && message.contains("converting-reconciler@0.2.0"),
        "{message}"
    );
}

#[test]
fn a_0_2_0_component_reconciles_and_converts() {
    let myapp = load("guest_myapp");
    assert_eq!(myapp.world(), "reconcile:guest/converting-reconciler@0.2.0");
    let parent = myapp_v1alpha1();
    let answer = myapp
        .call("default/demo-app", &Request::for_parent(&parent))
        .unwrap();
    assert_eq!(answer.children[0]["metadata"]["name"], "demo-app-deploy");

    let beta = myapp.convert(&parent, "example.com/v1beta1").unwrap();
    assert_eq!(beta["apiVersion"], "example.com/v1beta1");
    assert_eq!(beta["spec"]["template"]["image"], "nginx:1.27");
    assert_eq!(beta["metadata"], parent["metadata"]);
    assert_eq!(
        myapp.convert(&beta, "example.com/v1alpha1").unwrap(),
        parent
    );
    let err = myapp.convert(&parent, "example.com/v2").unwrap_err();
    assert!(matches!(err, GuestError::Rejected(_)), "{err}");
}

#[test]
fn a_failing_conversion_is_a_clear_error_and_the_next_one_works() {
    let faults = load("guest_faults");
    let object = |fault: Option<&str>| {
        let mut object = json!({
            "apiVersion": "example.com/v1alpha1", "kind": "MyApp",
            "metadata": {"name": "victim", "namespace": "team-a", "uid": "u-3", "annotations": {}},
            "spec": {}
        });
        if let Some(fault) = fault {
            object["metadata"]["annotations"]["faults.example.com/convert"] = json!(fault);
        }
        object
    };
    let to = "example.com/v1beta1";
    match faults.convert(&object(Some("error")), to).unwrap_err() {
        GuestError::Rejected(message) => {
            assert_eq!(message, "conversion refused by the faults guest")
        }
        other => panic!("expected the guest's error, got {other}"),
    }
    match faults.convert(&object(Some("trap")), to).unwrap_err() {
        GuestError::Trap { said, .. } => assert!(said.contains("convert trap"), "{said}"),
        other => panic!("expected a trap, got {other}"),
    }
    let converted = faults.convert(&object(None), to).unwrap();
    assert_eq!(converted["apiVersion"], to);
    assert_eq!(converted["metadata"]["uid"], "u-3");
}

#[test]
fn related_is_an_optional_export_found_by_name() {
    let configured = load("guest_configured");
    assert_eq!(
        configured.world(),
        "reconcile:guest/relating-reconciler@0.2.0"
    );
    assert!(configured.relates() && !configured.converts());
    let parent = json!({
        "apiVersion": "example.com/v1alpha1", "kind": "ConfiguredApp",
        "metadata": {"name": "shop", "namespace": "team-c"},
        "spec": {"image": "nginx:1.27", "configMapName": "shop-config"}
    });
    let selectors = configured
        .related("team-c/shop", &parent.to_string())
        .unwrap();
    let named: Vec<_> = selectors
        .iter()
        .map(|s| (s.api_version.as_str(), s.kind.as_str(), s.names.clone()))
        .collect();
    assert_eq!(
        named,
        [("v1", "ConfigMap", vec!["shop-config".to_string()])]
    );
    let refused = configured.related("team-c/shop", &json!({"spec": {}}).to_string());
    assert!(
        matches!(&refused, Err(GuestError::Rejected(m)) if m.contains("spec.configMapName")),
        "{refused:?}"
    );

    // Modules without `related`, of either version, select nothing.
    for guest in ["guest_website", "guest_myapp"] {
        let module = load(guest);
        assert!(!module.relates());
        assert!(
            module
                .related("default/demo-app", &myapp_v1alpha1().to_string())
                .unwrap()
                .is_empty()
        );
    }
}
