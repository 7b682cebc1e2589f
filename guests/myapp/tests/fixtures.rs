//! Runs every case in `fixtures/` (the seed's v1alpha1, which every language's MyApp guest passes) and
//! `fixtures-v1beta1/` (v1beta1 and conversion, this guest's own) through the pure functions, so that the
//! fixtures the host's `render` command and conformance suite use stay true to the logic: a case with
//! an `object.yaml` is a conversion, any other a reconcile.

use serde::Deserialize;
use serde_json::Value;
use std::path::Path;

/// Every document of a (multi-document) YAML file, empty documents left out.
fn documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    serde_norway::Deserializer::from_str(&text)
        .map(|doc| Value::deserialize(doc).unwrap())
        .filter(|doc| !doc.is_null())
        .collect()
}

fn one(path: &Path) -> Value {
    let mut docs = documents(path);
    assert_eq!(docs.len(), 1, "{}", path.display());
    docs.remove(0)
}

#[test]
fn fixtures() {
    assert_eq!(run_cases("fixtures"), (6, 0), "seed cases");
    assert_eq!(run_cases("fixtures-v1beta1"), (3, 8), "v1beta1 cases");
}

/// Runs every case under `dir`; how many reconcile and conversion cases there were.
fn run_cases(dir: &str) -> (usize, usize) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let (mut reconciles, mut conversions) = (0, 0);
    for entry in std::fs::read_dir(&root).unwrap() {
        let dir = entry.unwrap().path();
        let case = dir.file_name().unwrap().to_string_lossy().into_owned();
        if dir.join("object.yaml").exists() {
            conversion_case(&case, &dir);
            conversions += 1;
        } else {
            reconcile_case(&case, &dir);
            reconciles += 1;
        }
    }
    (reconciles, conversions)
}

/// `parent.yaml` and `observed.yaml` in; `expected.yaml` and `expected-status.yaml`, or
/// `expected-error.txt`, out.
fn reconcile_case(case: &str, dir: &Path) {
    let parent = one(&dir.join("parent.yaml")).to_string();
    let observed = dir.join("observed.yaml");
    let children: Vec<String> = if observed.exists() {
        documents(&observed).iter().map(Value::to_string).collect()
    } else {
        Vec::new()
    };
    let result = guest_myapp::reconcile(&parent, &children, false);
    if let Some(want) = expected_error(dir) {
        let err = result.expect_err(case);
        assert!(err.contains(&want), "{case}: {err:?} lacks {want:?}");
        return;
    }
    let out = result.unwrap_or_else(|e| panic!("{case}: {e}"));
    let got: Vec<Value> = out
        .children
        .iter()
        .map(|c| serde_json::from_str(c).unwrap())
        .collect();
    assert_eq!(
        got,
        documents(&dir.join("expected.yaml")),
        "{case}: children"
    );
    let status: Value = serde_json::from_str(&out.status.expect("status")).unwrap();
    assert_eq!(
        status,
        one(&dir.join("expected-status.yaml")),
        "{case}: status"
    );
}

/// `object.yaml` and `to-api-version.txt` in; `expected.yaml` or `expected-error.txt` out. As the host
/// does, a conversion must also convert back: `expected` to the object's apiVersion gives the object.
fn conversion_case(case: &str, dir: &Path) {
    let object = one(&dir.join("object.yaml"));
    let to = std::fs::read_to_string(dir.join("to-api-version.txt")).unwrap();
    let result = guest_myapp::convert(&object.to_string(), to.trim());
    if let Some(want) = expected_error(dir) {
        let err = result.expect_err(case);
        assert!(err.contains(&want), "{case}: {err:?} lacks {want:?}");
        return;
    }
    let got: Value =
        serde_json::from_str(&result.unwrap_or_else(|e| panic!("{case}: {e}"))).unwrap();
    let expected = one(&dir.join("expected.yaml"));
    assert_eq!(got, expected, "{case}: converted");
    let back = guest_myapp::convert(
        &expected.to_string(),
        object["apiVersion"].as_str().unwrap(),
    )
    .unwrap_or_else(|e| panic!("{case}: back: {e}"));
    let back: Value = serde_json::from_str(&back).unwrap();
    assert_eq!(back, object, "{case}: round trip");
}

/// The trimmed content of `expected-error.txt`, if the case expects an error.
fn expected_error(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("expected-error.txt")).ok()?;
    Some(text.trim().to_owned())
}
