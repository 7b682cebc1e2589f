//! Structural comparison of an answer with a fixture, naming the first difference as a JSON pointer.

use serde_json::Value;

/// The first place where `got` differs from `expected`, as `what` plus a JSON pointer, or `None`.
pub(super) fn difference(what: &str, expected: &Value, got: &Value) -> Option<String> {
    first_difference(String::new(), expected, got).map(|(pointer, why)| {
        let at = if pointer.is_empty() { "" } else { " at " };
        format!("{what}{at}{pointer}: {why}")
    })
}

fn first_difference(pointer: String, expected: &Value, got: &Value) -> Option<(String, String)> {
    match (expected, got) {
        (Value::Object(want), Value::Object(have)) => {
            for (key, value) in want {
                let path = format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1"));
                match have.get(key) {
                    None => return Some((path, format!("missing, expected {value}"))),
                    Some(other) => {
                        if let Some(found) = first_difference(path, value, other) {
                            return Some(found);
                        }
                    }
                }
            }
            have.iter()
                .find(|(key, _)| !want.contains_key(*key))
                .map(|(key, value)| {
                    let path = format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1"));
                    (path, format!("unexpected {value}"))
                })
        }
        (Value::Array(want), Value::Array(have)) => {
            let pairs = want.iter().zip(have).enumerate();
            for (i, (value, other)) in pairs {
                if let Some(found) = first_difference(format!("{pointer}/{i}"), value, other) {
                    return Some(found);
                }
            }
            (want.len() != have.len()).then(|| {
                (
                    pointer,
                    format!("expected {} items, got {}", want.len(), have.len()),
                )
            })
        }
        _ if expected == got => None,
        _ => Some((pointer, format!("expected {expected}, got {got}"))),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::difference;

    #[test]
    fn names_the_first_difference_as_a_json_pointer() {
        let want =
            json!([{"metadata": {"labels": {"example.com/x": "a"}}, "spec": {"replicas": 3}}]);
        assert_eq!(difference("children", &want, &want.clone()), None);
        let got =
            json!([{"metadata": {"labels": {"example.com/x": "b"}}, "spec": {"replicas": 3}}]);
        assert_eq!(
            difference("children", &want, &got).unwrap(),
            r#"children at /0/metadata/labels/example.com~1x: expected "a", got "b""#
        );
        let got = json!([{"metadata": {"labels": {"example.com/x": "a"}}, "spec": {"replicas": 3, "paused": true}}]);
        assert_eq!(
            difference("children", &want, &got).unwrap(),
            "children at /0/spec/paused: unexpected true"
        );
        assert_eq!(
            difference("children", &want, &json!([])).unwrap(),
            "children: expected 1 items, got 0"
        );
        assert_eq!(
            difference("status", &json!({"phase": "Ready"}), &json!(null)).unwrap(),
            r#"status: expected {"phase":"Ready"}, got null"#
        );
    }
}
