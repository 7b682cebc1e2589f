//! Registry credentials from a dockerconfigjson, wherever it comes from: a file (the `.dockerconfigjson`
//! of a Secret mounted into the host's Pod, or a `~/.docker/config.json`), or a Secret of type
//! `kubernetes.io/dockerconfigjson` read through the API by a client that acts as the reconciler (so a
//! team's Secret is read with the team's rights, never the host's). Read again before each registry
//! check, so a rotated Secret counts. Only `auth` or `username`/`password` entries: credential helpers
//! and identity tokens need a tool on the host.

use std::collections::BTreeMap;
use std::path::PathBuf;

use base64::Engine as _;
use k8s_openapi::api::core::v1::Secret;
use oci_client::secrets::RegistryAuth;

use super::OciError;

/// The key of a `kubernetes.io/dockerconfigjson` Secret that holds the config.
const DOCKER_CONFIG_KEY: &str = ".dockerconfigjson";

/// Where a module source's registry credentials come from.
#[derive(Clone, Default)]
pub enum Credentials {
    /// No credentials: anonymous pulls.
    #[default]
    Anonymous,
    /// The operator's dockerconfigjson file (`--oci-credentials`).
    File(PathBuf),
    /// A dockerconfigjson Secret, read with `client` (for a platform reconciler: its impersonating
    /// client, so that the API server checks the team's right to read it).
    Secret {
        client: kube::Client,
        namespace: String,
        name: String,
    },
}

impl Credentials {
    /// The file credentials of `--oci-credentials`, if given.
    pub fn file(path: Option<&std::path::Path>) -> Credentials {
        path.map_or(Credentials::Anonymous, |path| {
            Credentials::File(path.to_path_buf())
        })
    }

    /// The credentials, by registry host, as they are now.
    pub async fn read(&self) -> Result<BTreeMap<String, RegistryAuth>, OciError> {
        let error = |reason: String| OciError::Credentials {
            from: self.to_string(),
            reason,
        };
        let text = match self {
            Credentials::Anonymous => return Ok(BTreeMap::new()),
            Credentials::File(path) => std::fs::read(path).map_err(|e| error(e.to_string()))?,
            Credentials::Secret {
                client,
                namespace,
                name,
            } => {
                let api: kube::Api<Secret> = kube::Api::namespaced(client.clone(), namespace);
                let secret = api.get(name).await.map_err(|e| error(secret_error(e)))?;
                secret
                    .data
                    .and_then(|mut data| data.remove(DOCKER_CONFIG_KEY))
                    .ok_or_else(|| {
                        error(format!(
                            "no `{DOCKER_CONFIG_KEY}` key (a Secret of type kubernetes.io/dockerconfigjson is expected)"
                        ))
                    })?
                    .0
            }
        };
        parse_credentials(&text).map_err(error)
    }
}

/// Why a Secret could not be read, with what would fix it.
fn secret_error(error: kube::Error) -> String {
    match error {
        kube::Error::Api(status) if status.is_forbidden() => format!(
            "forbidden: the reconciler's ServiceAccount may not get it (grant `get` on this Secret, by resourceNames, in its Role): {}",
            status.message
        ),
        kube::Error::Api(status) if status.is_not_found() => "not found".to_string(),
        error => super::chain(&error),
    }
}

impl std::fmt::Display for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::Anonymous => f.write_str("none"),
            Credentials::File(path) => write!(f, "{}", path.display()),
            Credentials::Secret {
                namespace, name, ..
            } => write!(f, "Secret {namespace}/{name}"),
        }
    }
}

/// By what it names: a client shows nothing worth printing.
impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Credentials({self})")
    }
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
pub(super) mod tests {
    use super::*;

    /// A client of a fake API server that answers `GET .../secrets/NAME` with `(status code, body)`
    /// for each listed name (others: 404), one request a connection.
    pub(crate) async fn fake_api(
        secrets: Vec<(&'static str, u16, serde_json::Value)>,
    ) -> kube::Client {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let request = String::from_utf8_lossy(&request);
                let path = request.split_whitespace().nth(1).unwrap_or_default();
                let name = path
                    .split('?')
                    .next()
                    .unwrap_or_default()
                    .rsplit('/')
                    .next();
                let (code, body) = secrets
                    .iter()
                    .find(|(secret, ..)| Some(*secret) == name)
                    .map(|(_, code, body)| (*code, body.clone()))
                    .unwrap_or_else(|| (404, status(404, "NotFound", "secrets not found")));
                let body = body.to_string();
                let response = format!(
                    "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
            }
        });
        kube::Client::try_from(kube::Config::new(url.parse().unwrap())).unwrap()
    }

    /// A `Status` body, as the API server sends with an error.
    pub(crate) fn status(code: u16, reason: &str, message: &str) -> serde_json::Value {
        serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "reason": reason, "message": message, "code": code})
    }

    /// A `kubernetes.io/dockerconfigjson` Secret with `user:pass` for `registry`.
    pub(crate) fn pull_secret(registry: &str) -> serde_json::Value {
        let config = format!(r#"{{"auths": {{"{registry}": {{"auth": "dXNlcjpwYXNz"}}}}}}"#);
        let encoded = base64::engine::general_purpose::STANDARD.encode(config);
        serde_json::json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "registry"},
            "type": "kubernetes.io/dockerconfigjson", "data": {DOCKER_CONFIG_KEY: encoded}})
    }

    fn secret(client: &kube::Client, name: &str) -> Credentials {
        Credentials::Secret {
            client: client.clone(),
            namespace: "team-a".into(),
            name: name.into(),
        }
    }

    #[tokio::test]
    async fn a_pull_secret_is_read_through_the_api_and_each_failure_names_it() {
        let opaque = serde_json::json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "opaque"}, "data": {"token": "c2VjcmV0"}});
        let forbidden = status(403, "Forbidden", "secrets \"forbidden\" is forbidden");
        let client = fake_api(vec![
            ("registry", 200, pull_secret("r.io")),
            ("opaque", 200, opaque),
            ("forbidden", 403, forbidden),
        ])
        .await;
        let creds = secret(&client, "registry").read().await.unwrap();
        assert_eq!(
            creds["r.io"],
            RegistryAuth::Basic("user".into(), "pass".into())
        );
        for (name, expected) in [
            ("forbidden", "may not get it"),
            ("missing", "not found"),
            ("opaque", "no `.dockerconfigjson` key"),
        ] {
            let error = secret(&client, name).read().await.unwrap_err().to_string();
            let prefix = format!("reading the registry credentials Secret team-a/{name}: ");
            assert!(error.starts_with(&prefix), "{error}");
            assert!(error.contains(expected), "{error}");
        }
    }

    #[tokio::test]
    async fn file_credentials_and_none_are_the_same_code_path() {
        assert!(Credentials::file(None).read().await.unwrap().is_empty());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        std::fs::write(
            &path,
            br#"{"auths": {"r.io": {"username": "u", "password": "p"}}}"#,
        )
        .unwrap();
        let creds = Credentials::file(Some(&path)).read().await.unwrap();
        assert_eq!(creds["r.io"], RegistryAuth::Basic("u".into(), "p".into()));
        let missing = Credentials::file(Some(&dir.path().join("none")));
        let error = missing.read().await.unwrap_err().to_string();
        assert!(error.contains("none: No such file"), "{error}");
    }

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
