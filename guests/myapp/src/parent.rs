//! Reading the parent: its name, namespace and spec, with the seed's defaults and the spec's rules.
//!
//! Either version: a v1beta1 parent (`apiVersion: example.com/v1beta1`) has its image and resources in
//! `spec.template`; any other is read as v1alpha1 (the seed's parents may leave `apiVersion` out), whose
//! resources, if any, are in the annotation down-conversion wrote.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::convert::{TEMPLATE_ANNOTATION, saved_template};
use crate::object::Object;
use crate::{DEFAULT_IMAGE, DEFAULT_REPLICAS};

/// The parent as the rule needs it, checked.
#[derive(Debug)]
pub(crate) struct MyApp<'a> {
    pub name: Cow<'a, str>,
    pub namespace: Option<Cow<'a, str>>,
    pub replicas: i32,
    pub image: Cow<'a, str>,
    /// The container's resources, checked; `None` leaves them out of the Deployment.
    pub resources: Option<Value>,
}

/// The apiVersion read with v1beta1's spec.
const V1BETA1: &str = "example.com/v1beta1";

/// The fields of the parent that the rule reads, borrowed from its JSON where it can.
#[derive(Deserialize)]
struct Fields<'a> {
    #[serde(rename = "apiVersion", borrow)]
    api_version: Option<Cow<'a, str>>,
    #[serde(borrow)]
    metadata: Option<Object<Metadata<'a>>>,
    spec: Option<Object<Spec>>,
}

#[derive(Deserialize)]
struct Metadata<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    namespace: Option<Cow<'a, str>>,
    #[serde(borrow)]
    annotations: Option<Object<Annotations<'a>>>,
}

/// Only the one annotation the rule reads; the others are skipped unread.
#[derive(Deserialize)]
struct Annotations<'a> {
    /// [`crate::convert::TEMPLATE_ANNOTATION`] (serde wants the literal).
    #[serde(rename = "myapp.example.com/v1beta1-template", borrow)]
    template: Option<Cow<'a, str>>,
}

/// Kept as JSON values so that a wrong type gets the same message on either path.
#[derive(Deserialize, Default)]
struct Spec {
    replicas: Option<Value>,
    image: Option<Value>,
    template: Option<Value>,
}

impl<'a> MyApp<'a> {
    /// Reads and checks a parent. Errors name the field at fault.
    pub fn read(json: &'a str) -> Result<Self, String> {
        // Fast path: read only the fields the rule needs, without building a tree of the whole
        // object (in wasm, most of a reconcile went into that tree). Any other shape (a spec that is
        // not an object, a name that is not a string, duplicate keys) takes the general path, which
        // gives the same answer or the error to report.
        let fields = match serde_json::from_str::<Object<Fields>>(json) {
            Ok(Object(fields)) => fields,
            Err(_) => {
                let parent: Value = serde_json::from_str(json)
                    .map_err(|e| format!("parent is not valid JSON: {e}"))?;
                Fields::from_tree(&parent)?
            }
        };
        fields.check()
    }
}

impl<'a> Fields<'a> {
    fn from_tree(parent: &Value) -> Result<Fields<'static>, String> {
        let field = |pointer| {
            parent
                .pointer(pointer)
                .and_then(Value::as_str)
                .map(|s| Cow::Owned(s.to_owned()))
        };
        let spec = match parent.get("spec") {
            None | Some(Value::Null) => None,
            Some(Value::Object(spec)) => Some(Object(Spec {
                replicas: spec.get("replicas").cloned(),
                image: spec.get("image").cloned(),
                template: spec.get("template").cloned(),
            })),
            Some(other) => return Err(format!("spec must be an object, got {other}")),
        };
        // `~1` is the `/` in the annotation's name.
        let template = field("/metadata/annotations/myapp.example.com~1v1beta1-template");
        Ok(Fields {
            api_version: field("/apiVersion"),
            metadata: Some(Object(Metadata {
                name: field("/metadata/name"),
                namespace: field("/metadata/namespace"),
                annotations: Some(Object(Annotations { template })),
            })),
            spec,
        })
    }

    fn check(self) -> Result<MyApp<'a>, String> {
        let (name, namespace, annotations) = match self.metadata {
            Some(Object(m)) => (m.name, m.namespace, m.annotations),
            None => (None, None, None),
        };
        let name = name
            .filter(|name| !name.is_empty())
            .ok_or("parent has no metadata.name")?;
        if name.len() > 63 {
            // The name is also the `app` label value, which Kubernetes caps at 63 characters.
            return Err(format!(
                "metadata.name \"{name}\" is longer than 63 characters, too long for the app label"
            ));
        }
        let spec = self.spec.map(|Object(spec)| spec).unwrap_or_default();
        let replicas = replicas_of(spec.replicas)?;
        let saved = annotations.and_then(|Object(a)| a.template);
        let (image, resources) = if self.api_version.as_deref() == Some(V1BETA1) {
            v1beta1_template(spec.template)?
        } else {
            v1alpha1_template(spec.image, saved.as_deref())?
        };
        Ok(MyApp {
            name,
            namespace,
            replicas,
            image,
            resources,
        })
    }
}

/// The image and resources of a v1beta1 spec, from its `spec.template`.
fn v1beta1_template<'a>(template: Option<Value>) -> Result<(Cow<'a, str>, Option<Value>), String> {
    let mut template = match template {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(template)) => template,
        Some(other) => return Err(format!("spec.template must be an object, got {other}")),
    };
    let image = image_of(template.remove("image"), "spec.template.image")?;
    let resources = resources_of(template.remove("resources"), "spec.template.resources")?;
    Ok((image, resources))
}

/// The image and resources of a v1alpha1 spec: `spec.image`, and the resources that down-conversion
/// kept in the annotation (`saved`), if any.
fn v1alpha1_template<'a>(
    image: Option<Value>,
    saved: Option<&str>,
) -> Result<(Cow<'a, str>, Option<Value>), String> {
    let image = image_of(image, "spec.image")?;
    let resources = match saved {
        None => None,
        Some(text) => {
            let field = format!("the {TEMPLATE_ANNOTATION} annotation's resources");
            resources_of(saved_template(text)?.remove("resources"), &field)?
        }
    };
    Ok((image, resources))
}

/// `spec.replicas`: absent or `null` takes the default.
fn replicas_of(value: Option<Value>) -> Result<i32, String> {
    match value {
        None | Some(Value::Null) => Ok(DEFAULT_REPLICAS),
        Some(value) => value
            .as_i64()
            .and_then(|n| i32::try_from(n).ok())
            .filter(|n| *n >= 0)
            .ok_or_else(|| {
                format!("spec.replicas must be an integer from 0 to 2147483647, got {value}")
            }),
    }
}

/// The image (`field`): absent or `null` takes the default.
fn image_of<'a>(value: Option<Value>, field: &str) -> Result<Cow<'a, str>, String> {
    match value {
        None | Some(Value::Null) => Ok(Cow::Borrowed(DEFAULT_IMAGE)),
        Some(Value::String(image)) if !image.trim().is_empty() => Ok(Cow::Owned(image)),
        Some(value) => Err(format!("{field} must be a non-empty string, got {value}")),
    }
}

/// The resources (`field`), a corev1 `ResourceRequirements`: absent or `null` is none. Only `requests`
/// and `limits` are checked (maps of quantities, which JSON carries as strings or numbers); other keys
/// (`claims`) are the API server's to check when it takes the Deployment.
fn resources_of(value: Option<Value>, field: &str) -> Result<Option<Value>, String> {
    let resources = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(resources)) => resources,
        Some(other) => return Err(format!("{field} must be an object, got {other}")),
    };
    for key in ["requests", "limits"] {
        match resources.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::Object(quantities)) => {
                let bad = quantities
                    .iter()
                    .find(|(_, q)| !matches!(q, Value::String(_) | Value::Number(_)));
                if let Some((name, q)) = bad {
                    return Err(format!(
                        "{field}.{key}.{name} must be a quantity (a string or a number), got {q}"
                    ));
                }
            }
            Some(other) => return Err(format!("{field}.{key} must be a map, got {other}")),
        }
    }
    Ok(Some(Value::Object(resources)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The common shapes of either version take the fast path: falling back to the tree would still
    /// answer right, only 4-5x slower, which no other test would see.
    #[test]
    fn common_parents_take_the_fast_path() {
        for parent in [
            r#"{"apiVersion":"example.com/v1alpha1","metadata":{"name":"a","uid":"u"},
                "spec":{"replicas":3,"image":"nginx:1.23"}}"#,
            r#"{"apiVersion":"example.com/v1alpha1","metadata":{"name":"a","annotations":{"x":"y",
                "myapp.example.com/v1beta1-template":"{\"resources\":{}}"}},"spec":{"image":"i"}}"#,
            r#"{"apiVersion":"example.com/v1beta1","metadata":{"name":"a"},"spec":{"replicas":2,
                "template":{"image":"i","resources":{"limits":{"cpu":"1"}}}},"status":{}}"#,
        ] {
            assert!(
                serde_json::from_str::<Object<Fields>>(parent).is_ok(),
                "{parent}"
            );
            assert!(MyApp::read(parent).is_ok(), "{parent}");
        }
    }
}
