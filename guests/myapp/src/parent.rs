//! Reading the parent: its name, namespace and spec, with the seed's defaults and the spec's rules.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use crate::object::Object;
use crate::{DEFAULT_IMAGE, DEFAULT_REPLICAS};

/// The parent as the rule needs it, checked.
#[derive(Debug)]
pub(crate) struct MyApp<'a> {
    pub name: Cow<'a, str>,
    pub namespace: Option<Cow<'a, str>>,
    pub replicas: i32,
    pub image: Cow<'a, str>,
}

/// The fields of the parent that the rule reads, borrowed from its JSON where it can.
#[derive(Deserialize)]
struct Fields<'a> {
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
}

/// Kept as JSON values so that a wrong type gets the same message on either path.
#[derive(Deserialize)]
struct Spec {
    replicas: Option<Value>,
    image: Option<Value>,
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
            })),
            Some(other) => return Err(format!("spec must be an object, got {other}")),
        };
        Ok(Fields {
            metadata: Some(Object(Metadata {
                name: field("/metadata/name"),
                namespace: field("/metadata/namespace"),
            })),
            spec,
        })
    }

    fn check(self) -> Result<MyApp<'a>, String> {
        let (name, namespace) = match self.metadata {
            Some(Object(Metadata { name, namespace })) => (name, namespace),
            None => (None, None),
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
        let (replicas, image) = match self.spec {
            None => (None, None),
            Some(Object(Spec { replicas, image })) => (replicas, image),
        };
        Ok(MyApp {
            name,
            namespace,
            replicas: replicas_of(replicas)?,
            image: image_of(image)?,
        })
    }
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

/// `spec.image`: absent or `null` takes the default.
fn image_of<'a>(value: Option<Value>) -> Result<Cow<'a, str>, String> {
    match value {
        None | Some(Value::Null) => Ok(Cow::Borrowed(DEFAULT_IMAGE)),
        Some(Value::String(image)) if !image.trim().is_empty() => Ok(Cow::Owned(image)),
        Some(value) => Err(format!(
            "spec.image must be a non-empty string, got {value}"
        )),
    }
}
