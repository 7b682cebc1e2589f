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

/// The group of the test CRD (widgets.example.com).
const GROUP: &str = "example.com";

/// What the API server reads: the review as JSON.
fn answered(objects: Vec<Value>, convert: &ConvertFn) -> Value {
    serde_json::to_value(answer(review(objects), GROUP, convert).0).unwrap()
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
    let answer = serde_json::to_value(super::answer(review, GROUP, &rename).0).unwrap();
    assert_eq!(answer["response"]["result"]["status"], "Failure");
    assert_eq!(
        answer["response"]["result"]["message"],
        "request missing in ConversionReview"
    );
}

/// A widget with every kind of metadata a conversion must keep.
fn owned_widget() -> Value {
    let mut object = widget("a", 1);
    object["metadata"]["labels"] = json!({"team": "a"});
    object["metadata"]["annotations"] = json!({"note": "kept", "example.com/v1-size": "1"});
    object["metadata"]["finalizers"] = json!(["example.com/cleanup"]);
    object["metadata"]["ownerReferences"] = json!([{
        "apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "uid-owner",
    }]);
    object
}

#[test]
fn an_answer_that_changes_metadata_fails_naming_the_field_and_the_object() {
    let cases: [(Spoil, &str); 9] = [
        (
            |o| o["metadata"]["labels"]["role"] = json!("admin"),
            "metadata.labels[\"role\"] from nothing to \"admin\"",
        ),
        (
            |o| o["metadata"]["labels"]["team"] = json!("b"),
            "metadata.labels[\"team\"] from \"a\" to \"b\"",
        ),
        (
            |o| {
                o["metadata"].as_object_mut().unwrap().remove("labels");
            },
            "metadata.labels[\"team\"] from \"a\" to nothing",
        ),
        (
            |o| o["metadata"]["annotations"]["note"] = json!("rewritten"),
            "metadata.annotations[\"note\"] from \"kept\" to \"rewritten\"",
        ),
        (
            |o| o["metadata"]["annotations"]["other.io/x"] = json!("y"),
            "metadata.annotations[\"other.io/x\"] from nothing to \"y\"",
        ),
        (
            |o| o["metadata"]["finalizers"] = json!([]),
            "metadata.finalizers from [\"example.com/cleanup\"] to []",
        ),
        (
            |o| {
                o["metadata"].as_object_mut().unwrap().remove("finalizers");
            },
            "metadata.finalizers from [\"example.com/cleanup\"] to nothing",
        ),
        (
            |o| o["metadata"]["finalizers"] = json!(["example.com/cleanup", "evil.io/hold"]),
            "metadata.finalizers from [\"example.com/cleanup\"] to [\"example.com/cleanup\",\"evil.io/hold\"]",
        ),
        (
            |o| o["metadata"]["ownerReferences"][0]["uid"] = json!("uid-other"),
            "metadata.ownerReferences from [{",
        ),
    ];
    for (spoil, change) in cases {
        let answer = answered(vec![owned_widget()], &spoiled(spoil));
        let message = failure_message(&answer);
        assert!(
            message.starts_with(&format!(
                "converting Widget ns/a to example.com/v2: the converter changed {change}"
            )),
            "{message}"
        );
        assert!(
            message.ends_with(
                "a conversion may change only the version and the content (and annotations under \
                 example.com/ or *.example.com/)"
            ),
            "{message}"
        );
        assert_eq!(
            super::answer(review(vec![owned_widget()]), GROUP, &spoiled(spoil)).1,
            "ConversionMetadataChanged"
        );
    }
}

#[test]
fn annotations_of_the_crd_group_or_a_subdomain_may_change_and_look_alikes_may_not() {
    let set = |key: &'static str| {
        spoiled(move |o| o["metadata"]["annotations"][key] = json!("converted"))
    };
    for key in [
        "example.com/v1-size",
        "example.com/new",
        "myapp.example.com/v1beta1-template",
        "a.b.example.com/x",
    ] {
        let answer = answered(vec![owned_widget()], &set(key));
        assert_eq!(
            answer["response"]["result"]["status"], "Success",
            "{key}: {answer}"
        );
        assert_eq!(
            answer["response"]["convertedObjects"][0]["metadata"]["annotations"][key],
            "converted"
        );
    }
    for key in [
        "example.com.evil.io/x",
        "notexample.com/x",
        "com/x",
        "example.org/x",
        "kubectl.kubernetes.io/last-applied-configuration",
        "example.com",
        "/x",
    ] {
        let message = failure_message(&answered(vec![owned_widget()], &set(key))).to_string();
        assert!(
            message.contains(&format!(
                "changed metadata.annotations[{key:?}] from nothing"
            )),
            "{key}: {message}"
        );
    }
    // Removing a group annotation (as MyApp's up-conversion does) is the converter's own business too.
    let take = spoiled(|o| {
        o["metadata"]["annotations"]
            .as_object_mut()
            .unwrap()
            .remove("example.com/v1-size");
    });
    let answer = answered(vec![owned_widget()], &take);
    assert_eq!(
        answer["response"]["result"]["status"], "Success",
        "{answer}"
    );
}

#[test]
fn absent_and_empty_metadata_are_the_same() {
    let mut bare = widget("a", 1);
    bare["metadata"]["finalizers"] = json!([]);
    bare["metadata"]["labels"] = json!({});
    let emptied = spoiled(|o| {
        let metadata = o["metadata"].as_object_mut().unwrap();
        metadata.remove("finalizers");
        metadata.remove("labels");
        metadata.insert("annotations".into(), json!({}));
        metadata.insert("ownerReferences".into(), json!([]));
    });
    let answer = answered(vec![bare], &emptied);
    assert_eq!(
        answer["response"]["result"]["status"], "Success",
        "{answer}"
    );
}

#[test]
fn the_crd_group_is_its_name_after_the_plural() {
    assert_eq!(crd_group("myapps.example.com"), Some("example.com"));
    assert_eq!(
        crd_group("widgets.conversion-test.example.com"),
        Some("conversion-test.example.com")
    );
    assert_eq!(crd_group("myapps"), None);
    assert_eq!(crd_group("myapps."), None);
    assert!(
        !within_group("x/y", ""),
        "no group, no annotation of its own"
    );
}

/// The shipped MyApp module's conversions (its fixtures, both ways, linked natively) pass the check:
/// it keeps what v1alpha1 cannot hold in `myapp.example.com/v1beta1-template`, under `example.com`.
#[test]
fn the_myapp_modules_conversions_pass_the_check() {
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../guests/myapp/fixtures-v1beta1");
    let myapp = |object: &Value, to: &str| -> Result<Value, String> {
        let converted = guest_myapp::convert(&object.to_string(), to)?;
        Ok(serde_json::from_str(&converted).unwrap())
    };
    let mut checked = 0;
    for case in std::fs::read_dir(&fixtures).unwrap() {
        let dir = case.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("convert-") || dir.join("expected-error.txt").exists() {
            continue;
        }
        let object: Value =
            serde_norway::from_str(&std::fs::read_to_string(dir.join("object.yaml")).unwrap())
                .unwrap();
        let to = std::fs::read_to_string(dir.join("to-api-version.txt")).unwrap();
        let from = object["apiVersion"].as_str().unwrap().to_string();
        let there = convert_all(&[object], to.trim(), "example.com", &myapp)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        convert_all(&there, &from, "example.com", &myapp)
            .unwrap_or_else(|e| panic!("{name}, back: {e}"));
        checked += 1;
    }
    assert!(checked >= 4, "{checked} conversion fixtures");
}

#[test]
fn a_review_of_another_group_is_refused_without_calling_the_converter() {
    static CALLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let called = &CALLED;
    let watched = |object: &Value, to: &str| {
        called.store(true, std::sync::atomic::Ordering::Relaxed);
        rename(object, to)
    };
    let mut foreign = widget("a", 1);
    foreign["apiVersion"] = json!("other.example.com/v1");
    let sent = answered(vec![widget("b", 2), foreign], &watched);
    assert_eq!(
        failure_message(&sent),
        "this webhook converts objects of example.com only, not other.example.com/v1"
    );
    assert_eq!(sent["response"]["result"]["reason"], FOREIGN_GROUP);

    let mut asked = review(vec![widget("a", 1)]);
    asked.request.as_mut().unwrap().desired_api_version = "example.org/v2".into();
    let (refused, outcome) = answer(asked, GROUP, &watched);
    assert_eq!(outcome, FOREIGN_GROUP);
    assert!(refused.response.unwrap().result.is_failure());
    assert!(!called.load(std::sync::atomic::Ordering::Relaxed));
}

/// The fields a converted object is checked by, for the fuzz target's objects.
const OBJECT_KEYS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "namespace",
    "uid",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "spec",
    "status",
    "size",
    "count",
    "example.com/kept",
];

/// Objects of a review: fuzzed, most with the identity a stored object has.
fn review_objects() -> impl proptest::strategy::Strategy<Value = Vec<Value>> {
    use proptest::prelude::*;
    let object = (
        crate::fuzz::object(OBJECT_KEYS),
        any::<bool>(),
        "[a-c]{1,2}",
    )
        .prop_map(|(mut object, stored, name)| {
            if stored {
                object["apiVersion"] = json!("example.com/v1");
                object["kind"] = json!("Widget");
                object["metadata"] =
                    json!({"name": name, "namespace": "ns", "uid": format!("uid-{name}")});
            }
            object
        });
    proptest::collection::vec(object, 0..4)
}

proptest::proptest! {
    #![proptest_config(crate::fuzz::config())]

    /// Any review, answered by a converter that changes the objects in any way, is answered: a
    /// success holds each object in the desired version with its identity unchanged, in order.
    #[test]
    fn fuzz_conversion_reviews_are_answered_and_a_success_keeps_identities(
        objects in review_objects(),
        to in proptest::prop_oneof![
            proptest::strategy::Just("example.com/v2".to_string()),
            crate::fuzz::text("a-z./0-9"),
        ],
        change in crate::fuzz::object(OBJECT_KEYS),
    ) {
        let mut sent = review(objects.clone());
        sent.request.as_mut().unwrap().desired_api_version = to.clone();
        let convert = move |object: &Value, to: &str| -> Result<Value, String> {
            let mut converted = object.clone();
            let fields = converted.as_object_mut().ok_or("not an object")?;
            fields.insert("apiVersion".into(), json!(to));
            for (key, value) in change.as_object().into_iter().flatten() {
                fields.insert(key.clone(), value.clone());
            }
            Ok(converted)
        };
        let (answered, outcome) = answer(sent, GROUP, &convert);
        let response = answered.response.expect("a review with a request gets a response");
        if outcome == SUCCESS {
            proptest::prop_assert_eq!(response.converted_objects.len(), objects.len());
            for (before, after) in objects.iter().zip(&response.converted_objects) {
                proptest::prop_assert_eq!(&after["apiVersion"], &json!(to));
                for field in ["/kind", "/metadata/name", "/metadata/namespace", "/metadata/uid"] {
                    proptest::prop_assert_eq!(before.pointer(field), after.pointer(field));
                }
            }
        } else {
            proptest::prop_assert!(response.result.is_failure());
        }
    }
}
