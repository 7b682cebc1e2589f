//! The safety rules for guest output. The guest is untrusted: whatever it answers, it must not create
//! kinds outside the allow-list, reach into another namespace, or flood the API server.
//! Where children may live depends on the parent: see [`Placement`].

use serde_json::Value;

use crate::guest::Answer;
use crate::kind::Gvk;
pub use crate::placement::Placement;
pub use crate::rule::Rule;

/// What a guest may produce for one parent.
#[derive(Clone, Debug)]
pub struct Rules {
    /// The allow-listed child kinds; `None` accepts any kind (only `render` offers that, and says so).
    pub allowed: Option<Vec<Gvk>>,
    pub max_children: usize,
    pub max_child_bytes: usize,
}

impl Rules {
    pub fn new(allowed: Option<Vec<Gvk>>) -> Rules {
        Rules {
            allowed,
            max_children: 100,
            // etcd refuses objects over 1.5 MiB; stay well inside it.
            max_child_bytes: 512 << 10,
        }
    }
}

/// A desired child that passed the rules, with the namespace filled in and its kind resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Child {
    pub kind: Gvk,
    pub name: String,
    pub object: Value,
}

/// One refused child (or the whole answer): which one, and which rule it broke.
#[derive(Debug, thiserror::Error)]
#[error("guest output refused: child {child}: {rule}")]
pub struct ValidationError {
    /// `Kind/name` (`Kind/namespace/name` for a cluster-scoped parent) where known, else `#index`.
    pub child: String,
    pub rule: Rule,
}

/// How messages name a child: `Kind/name`, or `Kind/namespace/name` where a parent's children may
/// live in several namespaces (a cluster-scoped parent's), so that two children of one name differ.
pub fn child_id(kind: &str, namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(namespace) => format!("{kind}/{namespace}/{name}"),
        None => format!("{kind}/{name}"),
    }
}

impl Child {
    /// The namespace the child is applied in (validation filled it in).
    pub fn namespace(&self) -> &str {
        self.object["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
    }
}

/// Checks every child of `answer` for a parent in `namespace`; all pass or nothing is applied.
pub fn validate(
    answer: &Answer,
    namespace: &str,
    rules: &Rules,
) -> Result<Vec<Child>, ValidationError> {
    validate_in(answer, &Placement::ParentNamespace(namespace.into()), rules)
}

/// Checks every child of `answer` for a parent whose children belong where `placement` says.
pub fn validate_in(
    answer: &Answer,
    placement: &Placement,
    rules: &Rules,
) -> Result<Vec<Child>, ValidationError> {
    if answer.children.len() > rules.max_children {
        return Err(ValidationError {
            child: "(all)".into(),
            rule: Rule::TooMany {
                count: answer.children.len(),
                max: rules.max_children,
            },
        });
    }
    let mut children: Vec<Child> = Vec::with_capacity(answer.children.len());
    for (index, object) in answer.children.iter().enumerate() {
        let child = validate_child(index, object, placement, rules)?;
        if children.iter().any(|c| {
            c.kind == child.kind && c.name == child.name && c.namespace() == child.namespace()
        }) {
            let several_namespaces = !matches!(placement, Placement::ParentNamespace(_));
            let namespace = several_namespaces.then(|| child.namespace());
            return Err(ValidationError {
                child: child_id(&child.kind.kind, namespace, &child.name),
                rule: Rule::Duplicate,
            });
        }
        children.push(child);
    }
    Ok(children)
}

fn validate_child(
    index: usize,
    object: &Value,
    placement: &Placement,
    rules: &Rules,
) -> Result<Child, ValidationError> {
    let refuse = |child: String, rule: Rule| ValidationError { child, rule };
    let Value::Object(map) = object else {
        return Err(refuse(
            format!("#{index}"),
            Rule::NotAnObject(crate::guest::json_kind(object)),
        ));
    };
    let field = |name: &'static str| map.get(name).and_then(Value::as_str);
    let api_version = field("apiVersion")
        .ok_or_else(|| refuse(format!("#{index}"), Rule::MissingField("apiVersion")))?;
    let kind_name =
        field("kind").ok_or_else(|| refuse(format!("#{index}"), Rule::MissingField("kind")))?;
    let metadata = map.get("metadata");
    let name = metadata
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .ok_or_else(|| {
            refuse(
                format!("{kind_name} #{index}"),
                Rule::MissingField("metadata.name"),
            )
        })?;
    let id = format!("{kind_name}/{name}");

    let kind = match &rules.allowed {
        Some(allowed) => allowed
            .iter()
            .find(|k| k.matches(api_version, kind_name))
            .cloned(),
        None => format!("{api_version}/{kind_name}").parse().ok(),
    };
    let kind = kind.ok_or_else(|| {
        let allowed = rules
            .allowed
            .iter()
            .flatten()
            .map(Gvk::to_string)
            .collect::<Vec<_>>();
        let rule = Rule::KindNotAllowed {
            api_version: api_version.to_string(),
            kind: kind_name.to_string(),
            allowed: allowed.join(", "),
        };
        refuse(id.clone(), rule)
    })?;
    if let Err(reason) = check_name(name) {
        return Err(refuse(
            id,
            Rule::InvalidName {
                name: name.to_string(),
                reason,
            },
        ));
    }
    let namespace = match metadata.and_then(|m| m.get("namespace")) {
        None | Some(Value::Null) => placement.namespace_of(None),
        Some(Value::String(ns)) => placement.namespace_of(Some(ns)),
        Some(other) => placement.namespace_of(Some(&other.to_string())),
    }
    .map_err(|rule| refuse(id.clone(), rule))?;
    let size = serde_json::to_vec(object).map_or(usize::MAX, |bytes| bytes.len());
    if size > rules.max_child_bytes {
        return Err(refuse(
            id,
            Rule::TooLarge {
                size,
                max: rules.max_child_bytes,
            },
        ));
    }
    let mut object = object.clone();
    object["metadata"]["namespace"] = Value::String(namespace);
    Ok(Child {
        kind,
        name: name.to_string(),
        object,
    })
}

/// RFC 1123 subdomain, the rule for most object names.
pub fn check_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("it is empty");
    }
    if name.len() > 253 {
        return Err("it is longer than 253 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
    {
        return Err("only lowercase letters, digits, '-' and '.' are allowed");
    }
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if !alnum(name.as_bytes()[0]) || !alnum(name.as_bytes()[name.len() - 1]) {
        return Err("it must start and end with a letter or digit");
    }
    Ok(())
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
