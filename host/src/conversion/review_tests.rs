use serde_json::json;

use super::*;

fn widget(name: &str, size: i64) -> Value {
    json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}")},
        "spec": {"size": size},
    })
}

fn review(objects: Vec<Value>) -> ConversionReview {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "desiredAPIVersion": "example.com/v2",
            "objects": objects,
        },
    }))
    .unwrap()
}

/// What the API server reads: the review as JSON.
fn answered(objects: Vec<Value>, convert: &ConvertFn) -> Value {
    serde_json::to_value(answer(review(objects), convert).0).unwrap()
}

/// A correct converter: `spec.size` becomes `spec.count`.
fn rename(object: &Value, to: &str) -> Result<Value, String> {
    let mut object = object.clone();
    let size = object["spec"]
        .as_object_mut()
        .unwrap()
        .remove("size")
        .unwrap();
    object["spec"]["count"] = size;
    object["apiVersion"] = json!(to);
    Ok(object)
}

/// A converter that calls `rename`, then spoils the answer with `spoil`.
fn spoiled(spoil: impl Fn(&mut Value)) -> impl Fn(&Value, &str) -> Result<Value, String> {
    move |object, to| {
        let mut object = rename(object, to)?;
        spoil(&mut object);
        Ok(object)
    }
}

fn failure_message(answer: &Value) -> &str {
    assert_eq!(
        answer["response"]["result"]["status"], "Failure",
        "{answer}"
    );
    assert_eq!(
        answer["response"]["convertedObjects"],
        json!([]),
        "a failed review returns no objects: {answer}"
    );
    answer["response"]["result"]["message"].as_str().unwrap()
}

#[test]
fn every_object_is_converted_in_order_under_the_request_uid() {
    let answer = answered(vec![widget("a", 1), widget("b", 2)], &rename);
    assert_eq!(answer["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(answer["kind"], "ConversionReview");
    let response = &answer["response"];
    assert_eq!(response["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
    assert_eq!(response["result"]["status"], "Success");
    let objects = response["convertedObjects"].as_array().unwrap();
    assert_eq!(objects.len(), 2);
    assert_eq!(objects[0]["metadata"]["name"], "a");
    assert_eq!(objects[0]["apiVersion"], "example.com/v2");
    assert_eq!(objects[0]["spec"], json!({"count": 1}));
    assert_eq!(objects[1]["spec"], json!({"count": 2}));
}

#[test]
fn a_converter_error_fails_the_review_naming_the_object() {
    let refuse = |_: &Value, _: &str| -> Result<Value, String> { Err("no v2 for you".into()) };
    let answer = answered(vec![widget("a", 1)], &refuse);
    assert_eq!(
        answer["response"]["uid"],
        "705ab4f5-6393-11e8-b7cc-42010a800002"
    );
    assert_eq!(
        failure_message(&answer),
        "converting Widget ns/a to example.com/v2: no v2 for you"
    );
}

#[test]
fn an_answer_in_the_wrong_api_version_fails() {
    let stay = spoiled(|object| object["apiVersion"] = json!("example.com/v1"));
    let answer = answered(vec![widget("a", 1)], &stay);
    assert_eq!(
        failure_message(&answer),
        "converting Widget ns/a: the converter answered apiVersion \"example.com/v1\", not example.com/v2"
    );
    let drop = spoiled(|object| {
        object.as_object_mut().unwrap().remove("apiVersion");
    });
    let answer = answered(vec![widget("a", 1)], &drop);
    assert!(failure_message(&answer).contains("apiVersion nothing, not example.com/v2"));
}

#[test]
fn an_answer_that_is_not_an_object_fails() {
    let text = |_: &Value, _: &str| -> Result<Value, String> { Ok(json!("converted")) };
    let answer = answered(vec![widget("a", 1)], &text);
    assert_eq!(
        failure_message(&answer),
        "converting Widget ns/a to example.com/v2: the converter answered a string, not an object"
    );
}

/// Changes one thing in a correct answer.
type Spoil = fn(&mut Value);

#[test]
fn an_answer_that_changes_the_identity_fails_naming_the_field() {
    let cases: [(&str, Spoil, &str); 5] = [
        (
            "kind",
            |o| o["kind"] = json!("Gadget"),
            "\"Widget\" to \"Gadget\"",
        ),
        (
            "metadata.name",
            |o| o["metadata"]["name"] = json!("b"),
            "\"a\" to \"b\"",
        ),
        (
            "metadata.namespace",
            |o| o["metadata"]["namespace"] = json!("other"),
            "\"ns\" to \"other\"",
        ),
        (
            "metadata.uid",
            |o| o["metadata"]["uid"] = json!("uid-x"),
            "\"uid-a\" to \"uid-x\"",
        ),
        (
            "metadata.uid",
            |o| {
                o["metadata"].as_object_mut().unwrap().remove("uid");
            },
            "\"uid-a\" to nothing",
        ),
    ];
    for (field, spoil, change) in cases {
        let answer = answered(vec![widget("a", 1)], &spoiled(spoil));
        assert_eq!(
            failure_message(&answer),
            format!(
                "converting Widget ns/a to example.com/v2: the converter changed {field} from {change}"
            )
        );
    }
}

#[test]
fn one_bad_object_among_several_fails_the_whole_review() {
    let picky = |object: &Value, to: &str| {
        if object["metadata"]["name"] == "b" {
            Err("size 2 has no v2 form".to_string())
        } else {
            rename(object, to)
        }
    };
    let objects = vec![widget("a", 1), widget("b", 2), widget("c", 3)];
    let answer = answered(objects, &picky);
    assert_eq!(
        failure_message(&answer),
        "converting Widget ns/b to example.com/v2: size 2 has no v2 form"
    );
}

#[test]
fn cluster_scoped_and_unnamed_objects_are_still_named_in_messages() {
    let refuse = |_: &Value, _: &str| -> Result<Value, String> { Err("no".into()) };
    let cluster_scoped =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "a"}});
    let bare = json!({"apiVersion": "example.com/v1"});
    assert!(
        failure_message(&answered(vec![cluster_scoped], &refuse))
            .starts_with("converting Widget a to")
    );
    assert!(failure_message(&answered(vec![bare], &refuse)).starts_with("converting <unnamed> to"));
}

#[test]
fn a_review_without_a_request_is_invalid() {
    let review: ConversionReview = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
    }))
    .unwrap();
    let answer = serde_json::to_value(super::answer(review, &rename).0).unwrap();
    assert_eq!(answer["response"]["result"]["status"], "Failure");
    assert_eq!(
        answer["response"]["result"]["message"],
        "request missing in ConversionReview"
    );
}
