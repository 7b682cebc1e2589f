//! Unit tests of the pure MyApp reconcile function, native.

use guest_myapp::{Output, reconcile};
use serde_json::{Value, json};

fn parent(spec: Value) -> String {
    json!({
        "apiVersion": "example.com/v1alpha1",
        "kind": "MyApp",
        "metadata": { "name": "demo-app", "namespace": "default" },
        "spec": spec,
    })
    .to_string()
}

fn observed(ready: Option<i64>) -> String {
    let mut deployment = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": { "name": "demo-app-deploy", "namespace": "default" },
        "spec": { "replicas": 3 },
    });
    if let Some(ready) = ready {
        deployment["status"] = json!({ "readyReplicas": ready });
    }
    deployment.to_string()
}

/// The one child and the status, parsed.
fn run(parent: &str, children: &[String]) -> (Value, Value) {
    let out = reconcile(parent, children, false).expect("reconcile");
    assert_eq!(out.children.len(), 1, "{out:?}");
    assert_eq!(out.requeue_after_seconds, None);
    assert!(!out.finalized);
    let child = serde_json::from_str(&out.children[0]).unwrap();
    let status = serde_json::from_str(out.status.as_deref().expect("status")).unwrap();
    (child, status)
}

#[test]
fn seed_demo_app() {
    let (deployment, status) = run(
        &parent(json!({ "replicas": 3, "image": "nginx:1.23" })),
        &[],
    );
    let labels = json!({ "app": "demo-app" });
    assert_eq!(
        deployment,
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": { "name": "demo-app-deploy", "namespace": "default", "labels": labels },
            "spec": {
                "replicas": 3,
                "selector": { "matchLabels": labels },
                "template": {
                    "metadata": { "labels": labels },
                    "spec": { "containers": [{
                        "name": "main",
                        "image": "nginx:1.23",
                        "ports": [{ "containerPort": 80 }],
                    }] },
                },
            },
        })
    );
    assert_eq!(
        status,
        json!({ "phase": "Created", "replicas": 3, "readyReplicas": 0 })
    );
}

#[test]
fn defaults() {
    for spec in [
        json!({}),
        Value::Null,
        json!({ "replicas": null, "image": null }),
    ] {
        let (deployment, status) = run(&parent(spec), &[]);
        assert_eq!(deployment["spec"]["replicas"], 1);
        let image = &deployment["spec"]["template"]["spec"]["containers"][0]["image"];
        assert_eq!(image, "nginx:alpine");
        assert_eq!(status["replicas"], 1);
    }
    let no_spec = r#"{"metadata":{"name":"demo-app","namespace":"default"}}"#;
    assert_eq!(run(no_spec, &[]).0["spec"]["replicas"], 1);
}

#[test]
fn created_until_ready() {
    let spec = json!({ "replicas": 3, "image": "nginx:1.23" });
    for (ready, phase, count) in [
        (None, "Created", 0),
        (Some(0), "Created", 0),
        (Some(1), "Created", 1),
        (Some(3), "Ready", 3),
    ] {
        let (_, status) = run(&parent(spec.clone()), &[observed(ready)]);
        assert_eq!(status["phase"], phase, "ready {ready:?}");
        assert_eq!(status["readyReplicas"], count);
    }
}

#[test]
fn only_its_own_deployment_counts() {
    let spec = json!({ "replicas": 3 });
    let other = observed(Some(3)).replace("demo-app-deploy", "other-deploy");
    let config_map = json!({ "kind": "ConfigMap", "metadata": { "name": "demo-app-deploy" } });
    let (_, status) = run(&parent(spec), &[other, config_map.to_string()]);
    assert_eq!(status["phase"], "Created");
}

#[test]
fn no_namespace_no_namespace_field() {
    let (deployment, _) = run(r#"{"metadata":{"name":"x"},"spec":{}}"#, &[]);
    assert!(deployment["metadata"].get("namespace").is_none());
}

#[test]
fn finalizing_wants_nothing() {
    let invalid = parent(json!({ "replicas": -1 }));
    let expected = Output {
        finalized: true,
        ..Output::default()
    };
    assert_eq!(
        reconcile(&invalid, &[observed(Some(3))], true),
        Ok(expected)
    );
}

#[test]
fn invalid_specs_name_the_field() {
    for (spec, field) in [
        (json!({ "replicas": -1 }), "spec.replicas"),
        (json!({ "replicas": 1.5 }), "spec.replicas"),
        (json!({ "replicas": "3" }), "spec.replicas"),
        (json!({ "replicas": 1u64 << 40 }), "spec.replicas"),
        (json!({ "image": "" }), "spec.image"),
        (json!({ "image": "  " }), "spec.image"),
        (json!({ "image": 7 }), "spec.image"),
        (json!([1, 2]), "spec must be an object"),
    ] {
        let err = reconcile(&parent(spec.clone()), &[], false).unwrap_err();
        assert!(err.contains(field), "{spec}: {err}");
    }
}

#[test]
fn invalid_parents_and_children_are_errors() {
    let cases: [(&str, &[String], &str); 4] = [
        ("not json", &[], "parent is not valid JSON"),
        (r#"{"spec":{}}"#, &[], "metadata.name"),
        (r#"{"metadata":{"name":""}}"#, &[], "metadata.name"),
        (
            r#"{"metadata":{"name":"a"}}"#,
            &["{".to_owned()],
            "observed child 0",
        ),
    ];
    for (parent, children, message) in cases {
        let err = reconcile(parent, children, false).unwrap_err();
        assert!(err.contains(message), "{parent}: {err}");
    }
    let long = format!(r#"{{"metadata":{{"name":"{}"}}}}"#, "a".repeat(64));
    assert!(reconcile(&long, &[], false).unwrap_err().contains("63"));
}

/// The fast, typed reading must agree with the general one on shapes a derived reader would take
/// differently: arrays in place of objects, and duplicate keys (the last one wins).
#[test]
fn odd_shapes_read_as_json_objects_do() {
    let err = reconcile(r#"{"metadata":["demo-app"]}"#, &[], false).unwrap_err();
    assert!(err.contains("metadata.name"), "{err}");
    let err = reconcile(&parent(json!([3, "nginx:1.23"])), &[], false).unwrap_err();
    assert!(err.contains("spec must be an object"), "{err}");

    let positional =
        json!({ "kind": "Deployment", "metadata": ["demo-app-deploy"], "status": [3] });
    let (_, status) = run(&parent(json!({})), &[positional.to_string()]);
    assert_eq!(status["phase"], "Created", "an array is not metadata");

    let twice = r#"{"metadata":{"name":"first","name":"last"},"spec":{"replicas":2,"replicas":4}}"#;
    let (deployment, status) = run(twice, &[]);
    assert_eq!(deployment["metadata"]["name"], "last-deploy");
    assert_eq!(status["replicas"], 4);
}
