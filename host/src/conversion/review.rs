//! One ConversionReview, answered: every object through the converter, every answer held to what the
//! API server would otherwise reject or, worse, store. All or nothing: one object that fails fails the
//! whole review, because the API server cannot use a partly converted list.

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
}

/// How a review ended when it converted every object.
pub const SUCCESS: &str = "success";
/// The reason of a review that is not a ConversionReview with a request.
pub const BAD_REQUEST: &str = "BadRequest";

impl ObjectError {
    /// The failed review's reason, for its Status and metrics: the converter refused or failed, or it
    /// answered something that is not the object in the desired version.
    pub fn reason(&self) -> &'static str {
        match self {
            ObjectError::Converter { .. } => "ConverterFailed",
            ObjectError::NotAnObject { .. }
            | ObjectError::WrongApiVersion { .. }
            | ObjectError::Changed { .. } => "ConversionInvalid",
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

/// The answer to `review`: the converted objects in order, or a failure naming the first object that
/// failed and no objects at all. A review without a request gets an `invalid` answer. With it, how the
/// review ended: `SUCCESS`, or the failure's reason (as in its Status), for metrics.
pub fn answer(review: ConversionReview, convert: &ConvertFn) -> (ConversionReview, &'static str) {
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
    let converted = convert_all(&request.objects, &request.desired_api_version, convert);
    let response = ConversionResponse::for_request(request);
    match converted {
        Ok(objects) => (response.success(objects).into_review(), SUCCESS),
        Err(e) => {
            let status = Status::failure(&e.to_string(), e.reason());
            (response.failure(status).into_review(), e.reason())
        }
    }
}

/// Every object converted to `to`, or the first failure.
pub fn convert_all(
    objects: &[Value],
    to: &str,
    convert: &ConvertFn,
) -> Result<Vec<Value>, ObjectError> {
    objects
        .iter()
        .map(|object| convert_one(object, to, convert))
        .collect()
}

fn convert_one(object: &Value, to: &str, convert: &ConvertFn) -> Result<Value, ObjectError> {
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
    Ok(answer)
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
