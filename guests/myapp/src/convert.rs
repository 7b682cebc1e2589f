//! Converting a `MyApp` between the versions of its CRD, for the conversion webhook the host serves.
//!
//! v1alpha1 has `spec.image`; v1beta1 moved it to `spec.template.image`, beside the new
//! `spec.template.resources`. Down to v1alpha1, whatever of `spec.template` v1alpha1 cannot hold is kept as
//! JSON in the annotation [`TEMPLATE_ANNOTATION`], which up-conversion restores and removes: the Kubernetes
//! API conventions' way to make a round trip lose nothing. Everything else (metadata, status, spec keys
//! neither version defines) is kept as it is; only `apiVersion` changes.
//!
//! The annotation is also written for a `template: {}` or a template without an image, so that absent and
//! empty templates survive the round trip apart. It is not written for a template holding only an image,
//! which `spec.image` carries alone. An emptied `metadata.annotations` map is dropped, as the API server
//! drops empty maps in metadata anyway.
//!
//! Not on the reconcile hot path (the API server calls it when a client reads or writes at a version
//! other than the storage one), so it works on a `serde_json::Value` tree, which keeps what it does not
//! know for free.

use serde_json::{Map, Value};

/// The API group of `MyApp`.
pub const GROUP: &str = "example.com";
/// Where a v1alpha1 object keeps what it cannot hold of a v1beta1 `spec.template`, as a JSON object.
pub const TEMPLATE_ANNOTATION: &str = "myapp.example.com/v1beta1-template";
/// The versions [`convert`] knows, for error messages.
const KNOWN_VERSIONS: &str = "v1alpha1, v1beta1";

/// A version of `MyApp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// `spec.image`.
    V1alpha1,
    /// `spec.template.image` and `spec.template.resources`.
    V1beta1,
}

impl Version {
    /// Reads an apiVersion `example.com/<version>`; `what` says whose it is, for the error.
    pub fn parse(api_version: &str, what: &str) -> Result<Version, String> {
        let Some((group, version)) = api_version.split_once('/') else {
            return Err(format!(
                "{what} apiVersion {api_version:?} is not {GROUP}/<version> (known versions: {KNOWN_VERSIONS})"
            ));
        };
        if group != GROUP {
            return Err(format!(
                "{what} group {group:?} (apiVersion {api_version:?}) is not {GROUP}"
            ));
        }
        match version {
            "v1alpha1" => Ok(Version::V1alpha1),
            "v1beta1" => Ok(Version::V1beta1),
            _ => Err(format!(
                "unknown {what} version {version:?} (apiVersion {api_version:?}): known versions of {GROUP} are {KNOWN_VERSIONS}"
            )),
        }
    }
}

/// Returns the `MyApp` `object_json` converted to `to_api_version` (e.g. `example.com/v1beta1`), or the
/// object unchanged when it is at that version already.
///
/// Errors (never panics) on an object that is not a JSON object or not a `MyApp`, on an unknown source
/// or target version or group, on an invalid [`TEMPLATE_ANNOTATION`], and on an object whose spec holds
/// an unknown key where the other version has a field (it would be lost or overwritten).
pub fn convert(object_json: &str, to_api_version: &str) -> Result<String, String> {
    let mut object = match serde_json::from_str(object_json) {
        Ok(Value::Object(object)) => object,
        Ok(other) => return Err(format!("object is not a JSON object, got {other}")),
        Err(e) => return Err(format!("object is not valid JSON: {e}")),
    };
    match object.get("kind") {
        Some(Value::String(kind)) if kind == "MyApp" => {}
        Some(other) => return Err(format!("object kind is {other}, not MyApp")),
        None => return Err("object has no kind, not MyApp".into()),
    }
    let from = match object.get("apiVersion") {
        Some(Value::String(api_version)) => Version::parse(api_version, "object")?,
        _ => return Err("object has no apiVersion string".into()),
    };
    let to = Version::parse(to_api_version, "target")?;
    if from == to {
        return Ok(object_json.to_owned());
    }
    match to {
        Version::V1beta1 => up(&mut object)?,
        Version::V1alpha1 => down(&mut object)?,
    }
    object.insert("apiVersion".into(), to_api_version.into());
    Ok(Value::Object(object).to_string())
}

/// Reads the content of [`TEMPLATE_ANNOTATION`]: a JSON object.
pub(crate) fn saved_template(text: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str(text) {
        Ok(Value::Object(saved)) => Ok(saved),
        Ok(other) => Err(format!(
            "annotation {TEMPLATE_ANNOTATION} must hold a JSON object, got {other}"
        )),
        Err(e) => Err(format!(
            "annotation {TEMPLATE_ANNOTATION} is not valid JSON: {e}"
        )),
    }
}

/// v1alpha1 to v1beta1: `spec.image` and the annotation's template become `spec.template`.
fn up(object: &mut Map<String, Value>) -> Result<(), String> {
    let saved = take_annotation(object)?;
    let Some(spec) = spec_mut(object, saved.is_some())? else {
        return Ok(());
    };
    if spec.contains_key("template") {
        return Err(
            "spec.template is not a v1alpha1 field, and in v1beta1 it is the pod template: cannot convert"
                .into(),
        );
    }
    let image = spec.remove("image");
    let template = match (saved, image) {
        (None, None) => return Ok(()),
        (saved, image) => {
            let mut template = saved.unwrap_or_default();
            if let Some(image) = image {
                template.insert("image".into(), image);
            }
            template
        }
    };
    spec.insert("template".into(), Value::Object(template));
    Ok(())
}

/// v1beta1 to v1alpha1: `spec.template.image` becomes `spec.image`, the rest of the template the
/// annotation.
fn down(object: &mut Map<String, Value>) -> Result<(), String> {
    let annotated = annotations_mut(object).is_some_and(|a| a.contains_key(TEMPLATE_ANNOTATION));
    if annotated {
        return Err(format!(
            "annotation {TEMPLATE_ANNOTATION} is reserved for conversion: a v1beta1 object must not carry it"
        ));
    }
    let Some(spec) = spec_mut(object, false)? else {
        return Ok(());
    };
    if spec.contains_key("image") {
        return Err(
            "spec.image is not a v1beta1 field (the image is spec.template.image), and in v1alpha1 it is the image: cannot convert"
                .into(),
        );
    }
    let mut rest = match spec.remove("template") {
        None => return Ok(()),
        Some(Value::Object(template)) => template,
        Some(other) => return Err(format!("spec.template must be an object, got {other}")),
    };
    let image = rest.remove("image");
    let keep = !rest.is_empty() || image.is_none();
    if let Some(image) = image {
        spec.insert("image".into(), image);
    }
    if keep {
        let text = Value::Object(rest).to_string();
        annotations_or_new(object)?.insert(TEMPLATE_ANNOTATION.into(), text.into());
    }
    Ok(())
}

/// The spec, if there is one to change (`null` is none); with `create`, an empty one where there is none.
fn spec_mut(
    object: &mut Map<String, Value>,
    create: bool,
) -> Result<Option<&mut Map<String, Value>>, String> {
    match object.get("spec") {
        None | Some(Value::Null) if !create => return Ok(None),
        None | Some(Value::Null) => {
            object.insert("spec".into(), Value::Object(Map::new()));
        }
        Some(Value::Object(_)) => {}
        Some(other) => return Err(format!("spec must be an object, got {other}")),
    }
    Ok(object.get_mut("spec").and_then(Value::as_object_mut))
}

/// The annotations, if the object has a map of them.
fn annotations_mut(object: &mut Map<String, Value>) -> Option<&mut Map<String, Value>> {
    object
        .get_mut("metadata")?
        .get_mut("annotations")?
        .as_object_mut()
}

/// Removes [`TEMPLATE_ANNOTATION`] and returns its content, dropping the annotations map if it empties.
fn take_annotation(object: &mut Map<String, Value>) -> Result<Option<Map<String, Value>>, String> {
    let Some(annotations) = annotations_mut(object) else {
        return Ok(None);
    };
    let saved = match annotations.remove(TEMPLATE_ANNOTATION) {
        None => return Ok(None),
        Some(Value::String(text)) => saved_template(&text)?,
        Some(other) => {
            return Err(format!(
                "annotation {TEMPLATE_ANNOTATION} must be a string, got {other}"
            ));
        }
    };
    if annotations.is_empty()
        && let Some(Value::Object(metadata)) = object.get_mut("metadata")
    {
        metadata.remove("annotations");
    }
    Ok(Some(saved))
}

/// The annotations map, created (with `metadata`) where there is none.
fn annotations_or_new(object: &mut Map<String, Value>) -> Result<&mut Map<String, Value>, String> {
    let metadata = object
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or("metadata must be an object")?;
    metadata
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| "metadata.annotations must be an object".to_owned())
}
