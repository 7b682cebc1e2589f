//! Runs every case in `fixtures/` through the pure function, so that the fixtures the host's `render`
//! command and conformance suite use stay true to the logic.

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
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut cases = 0;
    for entry in std::fs::read_dir(&root).unwrap() {
        let dir = entry.unwrap().path();
        let case = dir.file_name().unwrap().to_string_lossy().into_owned();
        let parent = one(&dir.join("parent.yaml")).to_string();
        let observed = dir.join("observed.yaml");
        let children: Vec<String> = if observed.exists() {
            documents(&observed).iter().map(Value::to_string).collect()
        } else {
            Vec::new()
        };
        let result = guest_myapp::reconcile(&parent, &children, false);
        let error = dir.join("expected-error.txt");
        if error.exists() {
            let want = std::fs::read_to_string(&error).unwrap();
            let err = result.expect_err(&case);
            assert!(err.contains(want.trim()), "{case}: {err:?} lacks {want:?}");
        } else {
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
        cases += 1;
    }
    assert_eq!(cases, 6, "fixture cases");
}
