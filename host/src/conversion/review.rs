//! One ConversionReview, answered: every object through the converter, every answer held to what the
//! API server would otherwise reject or, worse, store. All or nothing: one object that fails fails the
//! whole review, because the API server cannot use a partly converted list.
//!
//! A conversion changes the version and the content, nothing else. The API server itself refuses a
//! changed kind, name, namespace or UID, and puts back every other metadata field but labels and
//! annotations, which it stores as converted: a `convert` could relabel every object of its kind (and
//! so move it between selectors) or rewrite what other controllers keep in annotations. The host
//! refuses any change to labels, ownerReferences or finalizers, and to annotations outside the CRD's
//! group (a key prefixed by the group or a subdomain of it, e.g. `myapp.example.com/` for
//! `example.com`, is the converter's own, where it keeps what the other version cannot hold).

use kube::core::Status;
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use serde_json::Value;

use crate::guest::json_kind;

/// Converts one object to the given apiVersion; in the host, the guest's `convert` export.
pub type ConvertFn = dyn Fn(&Value, &str) -> Result<Value, String>;

/// Why one object was not converted; its message names the object and is shown to the API's client.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ObjectError {
    #[error("converting {object} to {to}: {message}")]
    Converter {
        object: String,
        to: String,
        message: String,
    },
    #[error("converting {object} to {to}: the converter answered {answer}, not an object")]
    NotAnObject {
        object: String,
        to: String,
        answer: &'static str,
    },
    #[error("converting {object}: the converter answered apiVersion {got}, not {to}")]
    WrongApiVersion {
        object: String,
        to: String,
        got: String,
    },
    #[error("converting {object} to {to}: the converter changed {field} from {before} to {after}")]
    Changed {
        object: String,
        to: String,
        field: &'static str,
        before: String,
        after: String,
    },
    #[error(
        "converting {object} to {to}: the converter changed {field} {change}; a conversion may \
         change only the version and the content (and annotations under {group})"
    )]
    MetadataChanged {
        object: String,
        to: String,
        field: String,
        /// `from <before> to <after>`.
        change: String,
        group: String,
    },
}

/// How a review ended when it converted every object.
pub const SUCCESS: &str = "success";
/// The reason of a review that is not a ConversionReview with a request.
pub const BAD_REQUEST: &str = "BadRequest";
/// The converter returned an error, trapped, or ran out of time or memory.
pub const CONVERTER_FAILED: &str = "ConverterFailed";
/// The converter answered something that is not the object in the desired version.
pub const CONVERSION_INVALID: &str = "ConversionInvalid";
/// The review asks for, or sends, objects of another group than the webhook's CRD.
pub const FOREIGN_GROUP: &str = "ConversionForeignGroup";
/// The converter changed labels, annotations outside the group, ownerReferences or finalizers.
pub const METADATA_CHANGED: &str = "ConversionMetadataChanged";

impl ObjectError {
    /// The failed review's reason, for its Status and metrics: the converter refused or failed, or it
    /// answered something that is not the object in the desired version.
    pub fn reason(&self) -> &'static str {
        match self {
            ObjectError::Converter { .. } => CONVERTER_FAILED,
            ObjectError::NotAnObject { .. }
            | ObjectError::WrongApiVersion { .. }
            | ObjectError::Changed { .. } => CONVERSION_INVALID,
            ObjectError::MetadataChanged { .. } => METADATA_CHANGED,
        }
    }
}

/// The fields a conversion must leave as they are: the API server keys the object by them.
const IDENTITY: [(&str, &[&str]); 4] = [
    ("kind", &["kind"]),
    ("metadata.name", &["metadata", "name"]),
    ("metadata.namespace", &["metadata", "namespace"]),
    ("metadata.uid", &["metadata", "uid"]),
];

/// Lists of metadata a conversion must leave as they are (absent and empty are the same).
const KEPT_LISTS: [(&str, &str); 2] = [
    ("metadata.ownerReferences", "ownerReferences"),
    ("metadata.finalizers", "finalizers"),
];

/// The group of CRD `name`: the API server names every CRD `<plural>.<group>`.
pub fn crd_group(name: &str) -> Option<&str> {
    name.split_once('.')
        .map(|(_, group)| group)
        .filter(|g| !g.is_empty())
}

/// The answer to `review` for a CRD of `group`: the converted objects in order, or a failure naming
/// the first object that failed and no objects at all. A review without a request gets an `invalid`
/// answer. With it, how the review ended: `SUCCESS`, or the failure's reason (as in its Status), for
/// metrics.
pub fn answer(
    review: ConversionReview,
    group: &str,
    convert: &ConvertFn,
) -> (ConversionReview, &'static str) {
    let request = match ConversionRequest::from_review(review) {
        Ok(request) => request,
        Err(e) => {
            let status = Status::failure(&e.to_string(), BAD_REQUEST);
            return (
                ConversionResponse::invalid(status).into_review(),
                BAD_REQUEST,
            );
        }
    };
    if let Some(foreign) = foreign_group(&request.desired_api_version, &request.objects, group) {
        let message = format!("this webhook converts objects of {group} only, not {foreign}");
        let status = Status::failure(&message, FOREIGN_GROUP);
        let response = ConversionResponse::for_request(request).failure(status);
        return (response.into_review(), FOREIGN_GROUP);
    }
    let converted = convert_all(
        &request.objects,
        &request.desired_api_version,
        group,
        convert,
    );
    let response = ConversionResponse::for_request(request);
    match converted {
        Ok(objects) => (response.success(objects).into_review(), SUCCESS),
        Err(e) => {
            let status = Status::failure(&e.to_string(), e.reason());
            (response.failure(status).into_review(), e.reason())
        }
    }
}

/// The first apiVersion, of `to` and the objects', that is not of `group`: a review this webhook is
/// not the CRD's for (a CRD whose path names another reconciler's route in `serve`).
fn foreign_group<'a>(to: &'a str, objects: &'a [Value], group: &str) -> Option<&'a str> {
    let versions = objects.iter().map(|object| {
        object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
    });
    std::iter::once(to)
        .chain(versions)
        .find(|api_version| api_version.split_once('/').map(|(g, _)| g) != Some(group))
}

/// Every object (of a CRD of `group`) converted to `to`, or the first failure.
pub fn convert_all(
    objects: &[Value],
    to: &str,
    group: &str,
    convert: &ConvertFn,
) -> Result<Vec<Value>, ObjectError> {
    objects
        .iter()
        .map(|object| convert_one(object, to, group, convert))
        .collect()
}

fn convert_one(
    object: &Value,
    to: &str,
    group: &str,
    convert: &ConvertFn,
) -> Result<Value, ObjectError> {
    let id = || describe(object);
    let answer = convert(object, to).map_err(|message| ObjectError::Converter {
        object: id(),
        to: to.to_string(),
        message,
    })?;
    if !answer.is_object() {
        return Err(ObjectError::NotAnObject {
            object: id(),
            to: to.to_string(),
            answer: json_kind(&answer),
        });
    }
    if answer.get("apiVersion").and_then(Value::as_str) != Some(to) {
        return Err(ObjectError::WrongApiVersion {
            object: id(),
            to: to.to_string(),
            got: shown(answer.get("apiVersion")),
        });
    }
    for (field, path) in IDENTITY {
        let (before, after) = (at(object, path), at(&answer, path));
        if before != after {
            return Err(ObjectError::Changed {
                object: id(),
                to: to.to_string(),
                field,
                before: shown(before),
                after: shown(after),
            });
        }
    }
    if let Some((field, before, after)) = metadata_change(object, &answer, group) {
        return Err(ObjectError::MetadataChanged {
            object: id(),
            to: to.to_string(),
            field,
            change: format!("from {} to {}", shown(before), shown(after)),
            group: format!("{group}/ or *.{group}/"),
        });
    }
    Ok(answer)
}

/// A metadata field's values before and after, by name.
type Change<'a> = (String, Option<&'a Value>, Option<&'a Value>);

/// The first metadata field the answer changed, with its values before and after: a label (by key),
/// an annotation outside `group` (by key), the ownerReferences or the finalizers.
fn metadata_change<'a>(object: &'a Value, answer: &'a Value, group: &str) -> Option<Change<'a>> {
    changed_key(object, answer, "labels", |_| false)
        .or_else(|| {
            changed_key(object, answer, "annotations", |key| {
                within_group(key, group)
            })
        })
        .or_else(|| {
            KEPT_LISTS.iter().find_map(|(field, key)| {
                let path = ["metadata", key];
                let (before, after) = (at(object, &path), at(answer, &path));
                let same = before == after || (is_empty(before) && is_empty(after));
                (!same).then(|| (field.to_string(), before, after))
            })
        })
}

/// The first key of map `metadata.<field>` whose value differs, but the keys that are `own`.
fn changed_key<'a>(
    object: &'a Value,
    answer: &'a Value,
    field: &str,
    own: impl Fn(&str) -> bool,
) -> Option<Change<'a>> {
    let map = |value: &'a Value| at(value, &["metadata", field]).and_then(Value::as_object);
    let (before, after) = (map(object), map(answer));
    let keys: std::collections::BTreeSet<&String> = before
        .into_iter()
        .chain(after)
        .flat_map(|fields| fields.keys())
        .collect();
    keys.into_iter()
        .map(|key| {
            let path = ["metadata", field, key.as_str()];
            (key, at(object, &path), at(answer, &path))
        })
        .find(|(key, before, after)| !own(key) && before != after)
        .map(|(key, before, after)| (format!("metadata.{field}[{key:?}]"), before, after))
}

/// Absent, null, or an empty list or map.
fn is_empty(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::Array(items)) => items.is_empty(),
        Some(Value::Object(fields)) => fields.is_empty(),
        Some(_) => false,
    }
}

/// Whether annotation `key`'s prefix (before the `/`) is `group` or a subdomain of it: `example.com/`
/// and `myapp.example.com/` for `example.com`, but not `notexample.com/` or `example.com.evil.io/`.
pub fn within_group(key: &str, group: &str) -> bool {
    let Some((prefix, _)) = key.split_once('/') else {
        return false;
    };
    !group.is_empty()
        && (prefix == group
            || prefix
                .strip_suffix(group)
                .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')))
}

/// `Kind namespace/name` (or `Kind name` when cluster-scoped), as people look the object up.
fn describe(object: &Value) -> String {
    let text = |path: &[&str]| at(object, path).and_then(Value::as_str).unwrap_or("");
    let kind = text(&["kind"]);
    let (namespace, name) = (
        text(&["metadata", "namespace"]),
        text(&["metadata", "name"]),
    );
    let name = if name.is_empty() { "<unnamed>" } else { name };
    match (kind.is_empty(), namespace.is_empty()) {
        (true, true) => name.to_string(),
        (true, false) => format!("{namespace}/{name}"),
        (false, true) => format!("{kind} {name}"),
        (false, false) => format!("{kind} {namespace}/{name}"),
    }
}

fn at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |value, key| value.get(key))
}

/// A field's value for a message: JSON, or `nothing` when absent.
fn shown(value: Option<&Value>) -> String {
    value.map_or_else(|| "nothing".to_string(), Value::to_string)
}

#[cfg(test)]
#[path = "review_tests.rs"]
mod tests;
