//! A module in a ConfigMap, watched through the API: an update arrives as soon as the API server has it,
//! with no kubelet sync delay. The module sits in `binaryData` (raw or gzip-compressed wasm; a
//! ConfigMap holds at most ~1 MiB, so gzip gives a Rust guest plenty of room).

use std::io::Read;

use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::runtime::{WatchStreamExt, watcher};

use super::Update;

/// Decompressed modules larger than this are refused (a gzip bomb must not exhaust the host).
const MAX_MODULE_BYTES: u64 = 256 << 20;

#[derive(Clone, Debug, PartialEq)]
pub struct ConfigMapRef {
    pub namespace: String,
    pub name: String,
    /// The `binaryData` key; without one the ConfigMap must hold exactly one entry.
    pub key: Option<String>,
}

impl std::fmt::Display for ConfigMapRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)?;
        match &self.key {
            Some(key) => write!(f, "/{key}"),
            None => Ok(()),
        }
    }
}

pub fn updates(client: kube::Client, cm: ConfigMapRef) -> BoxStream<'static, Update> {
    let api: Api<ConfigMap> = Api::namespaced(client, &cm.namespace);
    let config = watcher::Config::default().fields(&format!("metadata.name={}", cm.name));
    watcher(api, config)
        .default_backoff()
        .applied_objects()
        .map(move |object| match object {
            Ok(object) => extract(&object, &cm),
            Err(e) => Err(format!("watching ConfigMap {cm}: {e}")),
        })
        .boxed()
}

/// The module bytes of a ConfigMap, decompressed if gzipped.
pub fn extract(object: &ConfigMap, cm: &ConfigMapRef) -> Update {
    let binary = object.binary_data.as_ref();
    let bytes = match (&cm.key, binary) {
        (Some(key), Some(data)) => data
            .get(key)
            .ok_or_else(|| format!("ConfigMap {cm} has no binaryData key `{key}`"))?,
        (None, Some(data)) if data.len() == 1 => data.values().next().expect("one entry"),
        (None, Some(data)) => {
            let keys: Vec<&String> = data.keys().collect();
            return Err(format!(
                "ConfigMap {cm} holds several modules {keys:?}: name one as NAMESPACE/NAME/KEY"
            ));
        }
        (_, None) => {
            return Err(format!(
                "ConfigMap {cm} has no binaryData (the module must be binary data)"
            ));
        }
    };
    let bytes = &bytes.0;
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(bytes.as_slice())
            .take(MAX_MODULE_BYTES + 1)
            .read_to_end(&mut out)
            .map_err(|e| format!("ConfigMap {cm}: gzip data is corrupt: {e}"))?;
        if out.len() as u64 > MAX_MODULE_BYTES {
            return Err(format!(
                "ConfigMap {cm}: module is larger than {MAX_MODULE_BYTES} bytes uncompressed"
            ));
        }
        Ok(out)
    } else {
        Ok(bytes.clone())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::io::Write;

    use k8s_openapi::ByteString;

    use super::*;

    fn configmap(entries: &[(&str, Vec<u8>)]) -> ConfigMap {
        ConfigMap {
            binary_data: Some(
                entries
                    .iter()
                    .map(|(k, v)| (k.to_string(), ByteString(v.clone())))
                    .collect::<BTreeMap<_, _>>(),
            ),
            ..ConfigMap::default()
        }
    }

    fn cm(key: Option<&str>) -> ConfigMapRef {
        ConfigMapRef {
            namespace: "ns".into(),
            name: "logic".into(),
            key: key.map(String::from),
        }
    }

    #[test]
    fn raw_and_gzipped_modules_are_read() {
        let module = b"\0asm\x0d\0\x01\0rest".to_vec();
        assert_eq!(
            extract(&configmap(&[("m.wasm", module.clone())]), &cm(None)).unwrap(),
            module
        );
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&module).unwrap();
        let gzipped = gz.finish().unwrap();
        assert_eq!(
            extract(
                &configmap(&[("m.wasm.gz", gzipped)]),
                &cm(Some("m.wasm.gz"))
            )
            .unwrap(),
            module
        );
    }

    #[test]
    fn ambiguous_or_missing_keys_are_clear_errors() {
        let two = configmap(&[("a", vec![1]), ("b", vec![2])]);
        assert!(
            extract(&two, &cm(None))
                .unwrap_err()
                .contains("NAMESPACE/NAME/KEY")
        );
        assert!(
            extract(&two, &cm(Some("c")))
                .unwrap_err()
                .contains("no binaryData key `c`")
        );
        assert!(
            extract(&ConfigMap::default(), &cm(None))
                .unwrap_err()
                .contains("no binaryData")
        );
    }

    #[test]
    fn references_parse() {
        assert_eq!("ns/logic".parse::<ConfigMapRef>().unwrap(), cm(None));
        assert_eq!(
            "ns/logic/m.wasm".parse::<ConfigMapRef>().unwrap(),
            cm(Some("m.wasm"))
        );
        assert!("logic".parse::<ConfigMapRef>().is_err());
    }
}

#[cfg(test)]
mod fuzz_tests {
    use std::collections::BTreeMap;
    use std::io::Write;

    use k8s_openapi::ByteString;
    use proptest::prelude::*;

    use super::*;

    /// A module's bytes as a ConfigMap may hold them: anything, a gzip stream of anything, a gzip
    /// stream cut short, or a gzip header on garbage.
    fn module_bytes() -> impl Strategy<Value = Vec<u8>> {
        let raw = proptest::collection::vec(any::<u8>(), 0..256);
        prop_oneof![
            raw.clone(),
            (raw, any::<u8>()).prop_map(|(bytes, cut)| {
                let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                gz.write_all(&bytes).unwrap();
                let mut gzipped = gz.finish().unwrap();
                if cut % 3 == 0 {
                    gzipped.truncate(gzipped.len() * usize::from(cut) / 256);
                }
                gzipped
            }),
            proptest::collection::vec(any::<u8>(), 0..64)
                .prop_map(|tail| { [&[0x1f, 0x8b][..], &tail].concat() }),
        ]
    }

    proptest! {
        #![proptest_config(crate::fuzz::config())]

        /// Any binaryData gives the module's bytes, at most the allowed size, or a refusal.
        #[test]
        fn fuzz_configmap_module_bytes_are_read_or_refused(bytes in module_bytes()) {
            let object = ConfigMap {
                binary_data: Some(BTreeMap::from([("m.wasm".to_string(), ByteString(bytes))])),
                ..ConfigMap::default()
            };
            let cm = ConfigMapRef { namespace: "ns".into(), name: "logic".into(), key: None };
            if let Ok(module) = extract(&object, &cm) {
                prop_assert!(module.len() as u64 <= MAX_MODULE_BYTES);
            }
        }
    }
}
