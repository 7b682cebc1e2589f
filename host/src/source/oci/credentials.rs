//! Registry credentials from a dockerconfigjson: the `.dockerconfigjson` of a mounted Secret of type
//! `kubernetes.io/dockerconfigjson`, or a `~/.docker/config.json`. Only `auth` or
//! `username`/`password` entries: credential helpers and identity tokens need a tool on the host.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;
use oci_client::secrets::RegistryAuth;

use super::OciError;

/// The credentials of a dockerconfigjson file, by registry host.
pub fn read_credentials(path: &Path) -> Result<BTreeMap<String, RegistryAuth>, OciError> {
    let error = |reason: String| OciError::Credentials {
        path: path.display().to_string(),
        reason,
    };
    let text = std::fs::read(path).map_err(|e| error(e.to_string()))?;
    parse_credentials(&text).map_err(error)
}

#[derive(serde::Deserialize)]
struct DockerConfig {
    #[serde(default)]
    auths: BTreeMap<String, DockerAuth>,
}

#[derive(serde::Deserialize)]
struct DockerAuth {
    auth: Option<String>,
    username: Option<String>,
    password: Option<String>,
}

fn parse_credentials(text: &[u8]) -> Result<BTreeMap<String, RegistryAuth>, String> {
    let config: DockerConfig =
        serde_json::from_slice(text).map_err(|e| format!("not a dockerconfigjson: {e}"))?;
    let mut out = BTreeMap::new();
    for (key, entry) in config.auths {
        // Keys are hosts, or URLs such as Docker Hub's `https://index.docker.io/v1/`.
        let host = key
            .trim_start_matches("https://")
            .trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap_or_default()
            .to_string();
        let (user, password) = match (entry.auth, entry.username, entry.password) {
            (Some(auth), _, _) => {
                let decoded = base64::engine::general_purpose::STANDARD
                    .decode(auth.trim())
                    .map_err(|e| format!("`auth` of {key} is not base64: {e}"))?;
                let decoded = String::from_utf8(decoded)
                    .map_err(|_| format!("`auth` of {key} is not UTF-8"))?;
                let (user, password) = decoded
                    .split_once(':')
                    .ok_or_else(|| format!("`auth` of {key} is not USER:PASSWORD"))?;
                (user.to_string(), password.to_string())
            }
            (None, Some(user), Some(password)) => (user, password),
            _ => {
                return Err(format!(
                    "{key} has neither `auth` nor `username` and `password`"
                ));
            }
        };
        out.insert(host, RegistryAuth::Basic(user, password));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dockerconfigjson_credentials_are_read_by_host() {
        let text = br#"{"auths": {
            "registry.example.com:5000": {"auth": "dXNlcjpwYXNz"},
            "https://index.docker.io/v1/": {"username": "hub", "password": "secret"}}}"#;
        let creds = parse_credentials(text).unwrap();
        assert_eq!(
            creds["registry.example.com:5000"],
            RegistryAuth::Basic("user".into(), "pass".into())
        );
        assert_eq!(
            creds["index.docker.io"],
            RegistryAuth::Basic("hub".into(), "secret".into())
        );
        assert!(
            parse_credentials(br#"{"auths": {"r.io": {"auth": "bm9jb2xvbg=="}}}"#)
                .unwrap_err()
                .contains("not USER:PASSWORD")
        );
        assert!(
            parse_credentials(b"not json")
                .unwrap_err()
                .contains("not a dockerconfigjson")
        );
    }
}
