//! Unit tests of reconcile on v1beta1 parents, native: the same Deployment as the equivalent v1alpha1
//! parent (the conversion of one into the other), plus the resources; errors name v1beta1's fields.

use guest_myapp::convert::TEMPLATE_ANNOTATION;
use guest_myapp::{convert, reconcile};
use serde_json::{Value, json};

fn parent(api_version: &str, spec: Value) -> String {
    json!({
        "apiVersion": api_version,
        "kind": "MyApp",
        "metadata": { "name": "demo-app", "namespace": "default" },
        "spec": spec,
    })
    .to_string()
}

fn beta(spec: Value) -> String {
    parent("example.com/v1beta1", spec)
}

/// The container of the one Deployment.
fn container(parent: &str) -> Value {
    let out = reconcile(parent, &[], false).unwrap_or_else(|e| panic!("{parent}: {e}"));
    let deployment: Value = serde_json::from_str(&out.children[0]).unwrap();
    deployment["spec"]["template"]["spec"]["containers"][0].clone()
}

#[test]
fn either_version_gives_the_same_answer() {
    let resources = json!({ "requests": { "cpu": "100m" }, "limits": { "memory": 1024 } });
    let betas = [
        json!({}),
        json!({ "replicas": 3, "template": { "image": "nginx:1.23" } }),
        json!({ "template": { "resources": resources } }),
        json!({ "replicas": 2, "template": { "image": "i", "resources": resources, "x": 1 } }),
    ];
    for spec in betas {
        let beta = beta(spec);
        let alpha = convert(&beta, "example.com/v1alpha1").unwrap();
        assert_eq!(
            reconcile(&beta, &[], false),
            reconcile(&alpha, &[], false),
            "{alpha}"
        );
    }
    let alpha = parent(
        "example.com/v1alpha1",
        json!({ "replicas": 3, "image": "nginx:1.23" }),
    );
    let beta = convert(&alpha, "example.com/v1beta1").unwrap();
    assert_eq!(reconcile(&beta, &[], false), reconcile(&alpha, &[], false));
}

#[test]
fn resources_only_when_set() {
    let resources = json!({ "limits": { "cpu": "1" }, "claims": [{ "name": "gpu" }] });
    let got = container(&beta(json!({ "template": { "resources": resources } })));
    assert_eq!(got["resources"], resources);
    assert_eq!(got["image"], "nginx:alpine", "the default image");
    for spec in [
        json!({ "template": {} }),
        json!({ "template": { "resources": null } }),
    ] {
        let got = container(&beta(spec));
        assert!(got.get("resources").is_none(), "{got}");
    }
}

#[test]
fn only_the_version_s_own_fields_count() {
    // A v1beta1 `spec.image` and a v1alpha1 `spec.template` are unknown keys, not the image.
    let got = container(&beta(json!({ "image": "ignored" })));
    assert_eq!(got["image"], "nginx:alpine");
    let alpha = parent(
        "example.com/v1alpha1",
        json!({ "template": { "image": "ignored", "resources": { "limits": {} } } }),
    );
    let got = container(&alpha);
    assert_eq!(got["image"], "nginx:alpine");
    assert!(got.get("resources").is_none(), "{got}");
}

#[test]
fn invalid_specs_name_the_v1beta1_field() {
    for (spec, field) in [
        (
            json!({ "template": { "image": "" } }),
            "spec.template.image must be",
        ),
        (
            json!({ "template": { "image": 7 } }),
            "spec.template.image must be",
        ),
        (
            json!({ "template": [1] }),
            "spec.template must be an object",
        ),
        (
            json!({ "template": { "resources": 1 } }),
            "spec.template.resources must be",
        ),
        (
            json!({ "template": { "resources": { "limits": [] } } }),
            "spec.template.resources.limits must be a map",
        ),
        (
            json!({ "template": { "resources": { "requests": { "cpu": true } } } }),
            "spec.template.resources.requests.cpu must be a quantity",
        ),
        (json!({ "replicas": -1 }), "spec.replicas"),
    ] {
        let err = reconcile(&beta(spec.clone()), &[], false).unwrap_err();
        assert!(err.contains(field), "{spec}: {err}");
    }
}

#[test]
fn a_bad_annotation_is_an_error_naming_it() {
    for (saved, message) in [
        ("{", "is not valid JSON"),
        (
            r#"{"resources":{"limits":[]}}"#,
            "resources.limits must be a map",
        ),
    ] {
        let alpha = json!({
            "apiVersion": "example.com/v1alpha1",
            "metadata": { "name": "a", "annotations": { TEMPLATE_ANNOTATION: saved } },
        });
        let err = reconcile(&alpha.to_string(), &[], false).unwrap_err();
        assert!(err.contains(TEMPLATE_ANNOTATION), "{err}");
        assert!(err.contains(message), "{err}");
    }
}

/// The fast, typed reading and the general one agree on v1beta1 too (duplicate keys: the last wins).
#[test]
fn duplicate_keys_read_as_json_objects_do() {
    let twice = r#"{"apiVersion":"example.com/v1beta1","metadata":{"name":"a"},
        "spec":{"template":{"image":"first"},"template":{"image":"last"}}}"#;
    assert_eq!(container(twice)["image"], "last");
    let annotated = r#"{"metadata":{"name":"a","annotations":{
        "myapp.example.com/v1beta1-template":"{}",
        "myapp.example.com/v1beta1-template":"{\"resources\":{\"limits\":{\"cpu\":2}}}"}}}"#;
    assert_eq!(
        container(annotated)["resources"],
        json!({ "limits": { "cpu": 2 } })
    );
}
