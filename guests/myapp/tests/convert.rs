//! Unit tests of `convert`, native: round trips lose nothing, in both directions, and every bad input
//! is an error that says what is wrong.

use guest_myapp::convert;
use guest_myapp::convert::TEMPLATE_ANNOTATION;
use serde_json::{Value, json};

const ALPHA: &str = "example.com/v1alpha1";
const BETA: &str = "example.com/v1beta1";

fn object(api_version: &str, metadata: Value, spec: Option<Value>) -> Value {
    let mut object = json!({
        "apiVersion": api_version,
        "kind": "MyApp",
        "metadata": metadata,
        "status": { "phase": "Ready", "replicas": 2, "readyReplicas": 2 },
    });
    if let Some(spec) = spec {
        object["spec"] = spec;
    }
    object
}

fn meta() -> Value {
    json!({
        "name": "app", "namespace": "ns", "uid": "u-1", "resourceVersion": "7",
        "labels": { "team": "a" },
    })
}

fn convert_value(object: &Value, to: &str) -> Value {
    let out = convert(&object.to_string(), to).unwrap_or_else(|e| panic!("{object}: {e}"));
    serde_json::from_str(&out).unwrap()
}

fn assert_round_trip(object: &Value, via: &str) -> Value {
    let there = convert_value(object, via);
    assert_eq!(there["apiVersion"], via, "{object}");
    let back = convert_value(&there, object["apiVersion"].as_str().unwrap());
    assert_eq!(&back, object, "via {there}");
    there
}

#[test]
fn alpha_to_beta_and_back() {
    let annotated = json!({ "name": "app", "annotations": {
        "other": "x",
        TEMPLATE_ANNOTATION: r#"{"resources":{"limits":{"cpu":"1"}}}"#,
    } });
    for (metadata, spec) in [
        (meta(), None),
        (meta(), Some(Value::Null)),
        (meta(), Some(json!({}))),
        (meta(), Some(json!({ "replicas": 2 }))),
        (
            meta(),
            Some(json!({ "image": "nginx:1.23", "fault": "trap" })),
        ),
        (meta(), Some(json!({ "image": null }))),
        (annotated.clone(), Some(json!({ "image": "nginx:1.23" }))),
        (annotated, Some(json!({ "replicas": 1 }))),
    ] {
        assert_round_trip(&object(ALPHA, metadata, spec), BETA);
    }
}

#[test]
fn beta_to_alpha_and_back() {
    let resources = json!({ "requests": { "cpu": "100m" }, "limits": { "memory": 1024 } });
    for spec in [
        None,
        Some(json!({})),
        Some(json!({ "replicas": 2, "extra": [1] })),
        Some(json!({ "template": {} })),
        Some(json!({ "template": { "image": "nginx:1.25" } })),
        Some(json!({ "template": { "image": "nginx:1.25", "resources": resources } })),
        Some(json!({ "template": { "resources": resources, "sidecar": true } })),
        Some(json!({ "template": { "image": null, "resources": null } })),
    ] {
        for metadata in [
            meta(),
            json!({ "name": "app", "annotations": { "a": "b" } }),
        ] {
            assert_round_trip(&object(BETA, metadata, spec.clone()), ALPHA);
        }
    }
}

#[test]
fn up_moves_the_image_and_restores_the_annotation() {
    let alpha = object(
        ALPHA,
        json!({ "name": "app", "annotations": { TEMPLATE_ANNOTATION: r#"{"resources":{}}"# } }),
        Some(json!({ "replicas": 2, "image": "nginx:1.23", "fault": "none" })),
    );
    let beta = convert_value(&alpha, BETA);
    let spec = json!({
        "replicas": 2,
        "fault": "none",
        "template": { "image": "nginx:1.23", "resources": {} },
    });
    assert_eq!(beta["spec"], spec);
    assert_eq!(
        beta["metadata"],
        json!({ "name": "app" }),
        "the annotation is gone"
    );
    assert_eq!(beta["status"], alpha["status"]);
}

#[test]
fn down_keeps_only_what_alpha_cannot_hold() {
    let template_only_image = json!({ "template": { "image": "nginx:1.25" } });
    let alpha = convert_value(&object(BETA, meta(), Some(template_only_image)), ALPHA);
    assert_eq!(alpha["spec"], json!({ "image": "nginx:1.25" }));
    assert_eq!(alpha["metadata"], meta(), "nothing to keep, no annotation");

    let with_resources = json!({ "template": { "image": "i", "resources": { "limits": {} } } });
    let alpha = convert_value(&object(BETA, meta(), Some(with_resources)), ALPHA);
    let saved = &alpha["metadata"]["annotations"][TEMPLATE_ANNOTATION];
    assert_eq!(saved, r#"{"resources":{"limits":{}}}"#);
}

#[test]
fn same_version_is_the_object_unchanged() {
    // Odd spacing and key order: returned as it came, not re-serialized.
    let text =
        r#"{ "kind": "MyApp", "apiVersion": "example.com/v1beta1", "spec": {"z": 1, "a": 2} }"#;
    assert_eq!(convert(text, BETA).as_deref(), Ok(text));
}

#[test]
fn errors_say_what_is_wrong() {
    let alpha = |spec: Value| object(ALPHA, meta(), Some(spec)).to_string();
    let beta = |spec: Value| object(BETA, meta(), Some(spec)).to_string();
    let annotated = |value: Value| {
        let metadata = json!({ "name": "a", "annotations": { TEMPLATE_ANNOTATION: value } });
        object(ALPHA, metadata, Some(json!({}))).to_string()
    };
    let cases = [
        ("not json".to_owned(), BETA, "not valid JSON"),
        ("[1]".to_owned(), BETA, "not a JSON object"),
        (
            r#"{"apiVersion":"example.com/v1alpha1"}"#.to_owned(),
            BETA,
            "no kind, not MyApp",
        ),
        (
            r#"{"kind":"Pod","apiVersion":"v1"}"#.to_owned(),
            BETA,
            "not MyApp",
        ),
        (r#"{"kind":"MyApp"}"#.to_owned(), BETA, "no apiVersion"),
        (
            alpha(json!({})).replace("v1alpha1", "v9"),
            BETA,
            "unknown object version \"v9\"",
        ),
        (
            alpha(json!({})),
            "example.com/v2",
            "known versions of example.com are v1alpha1, v1beta1",
        ),
        (alpha(json!({})), "v1beta1", "is not example.com/<version>"),
        (alpha(json!({})), "apps/v1beta1", "target group \"apps\""),
        (annotated(json!("{")), BETA, "is not valid JSON"),
        (annotated(json!("[]")), BETA, "must hold a JSON object"),
        (annotated(json!({})), BETA, "must be a string"),
        (
            alpha(json!({ "template": {} })),
            BETA,
            "spec.template is not a v1alpha1 field",
        ),
        (alpha(json!([1])), BETA, "spec must be an object"),
        (
            beta(json!({ "image": "x" })),
            ALPHA,
            "spec.image is not a v1beta1 field",
        ),
        (
            beta(json!({ "template": "x" })),
            ALPHA,
            "spec.template must be an object",
        ),
        (
            beta(json!({ "template": null })),
            ALPHA,
            "spec.template must be an object",
        ),
    ];
    for (object, to, message) in cases {
        let err = convert(&object, to).unwrap_err();
        assert!(err.contains(message), "{object} to {to}: {err}");
    }
    let metadata = json!({ "name": "a", "annotations": { TEMPLATE_ANNOTATION: "{}" } });
    let err = convert(&object(BETA, metadata, None).to_string(), ALPHA).unwrap_err();
    assert!(err.contains("reserved for conversion"), "{err}");
}
