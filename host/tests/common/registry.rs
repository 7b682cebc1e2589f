//! A real OCI registry for tests: go-containerregistry's, built from Go modules by
//! `tests/registry/build.sh` (`RECONCILE_HOST_REGISTRY_BIN`, as `make test` sets it, or else what the
//! script prints), on a free loopback port with its blobs in a temp dir, killed on drop. Modules are
//! pushed with the host's own `push`; a tag is moved by copying a manifest, without uploading blobs.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use super::guests::go_tools;

/// The registry binary.
fn binary() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        go_tools("RECONCILE_HOST_REGISTRY_BIN", "tests/registry/build.sh").join("registry")
    })
}

pub struct Registry {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    blobs: tempfile::TempDir,
    log: PathBuf,
    /// The certificate of an HTTPS registry (its own CA).
    pub ca: Option<PathBuf>,
    /// `user:password`, if it asks for them.
    auth: Option<String>,
}

impl Registry {
    /// A registry anyone may pull from and push to.
    pub fn start() -> Registry {
        Registry::spawn(None, false)
    }

    /// A registry that asks for `user:password` on every request.
    pub fn with_auth(user_password: &str) -> Registry {
        Registry::spawn(Some(user_password), false)
    }

    /// A registry on HTTPS with a self-signed certificate (`ca`).
    pub fn with_tls() -> Registry {
        Registry::spawn(None, true)
    }

    fn spawn(auth: Option<&str>, tls: bool) -> Registry {
        let blobs = tempfile::tempdir().unwrap();
        let log = blobs.path().join("registry.log");
        let ca = tls.then(|| blobs.path().join("ca.pem"));
        let mut command = Command::new(binary());
        command
            .args(["-addr", "127.0.0.1:0", "-dir"])
            .arg(blobs.path())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap());
        if let Some(auth) = auth {
            command.args(["-auth", auth]);
        }
        if let Some(ca) = &ca {
            command.arg("-tls-ca").arg(ca);
        }
        let mut child = command.spawn().expect("starting the test registry");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("the registry said {line:?}"))
            .to_string();
        Registry {
            child,
            addr,
            blobs,
            log,
            ca,
            auth: auth.map(String::from),
        }
    }

    /// A dockerconfigjson with this registry's `user:password`, as a pull Secret's `.dockerconfigjson`
    /// or an `--oci-credentials` file holds it.
    pub fn docker_config(&self) -> String {
        use base64::Engine as _;
        let auth = self
            .auth
            .as_deref()
            .expect("a registry that asks for credentials");
        let auth = base64::engine::general_purpose::STANDARD.encode(auth);
        format!(r#"{{"auths": {{"{}": {{"auth": "{auth}"}}}}}}"#, self.addr)
    }

    /// `docker_config` written to `dir/config.json`, for `--oci-credentials`.
    pub fn credentials_file(&self, dir: &Path) -> PathBuf {
        let path = dir.join("config.json");
        std::fs::write(&path, self.docker_config()).unwrap();
        path
    }

    /// `oci://ADDR/REPOSITORY_AND_TAG`.
    pub fn reference(&self, repository_and_tag: &str) -> String {
        format!("oci://{}/{repository_and_tag}", self.addr)
    }

    /// The host flags to reach this registry: plain HTTP, or HTTPS trusting its certificate.
    pub fn flags(&self) -> Vec<String> {
        match &self.ca {
            Some(ca) => vec!["--oci-ca-file".into(), ca.display().to_string()],
            None => vec!["--oci-plain-http".into(), self.addr.clone()],
        }
    }

    /// Pushes a module with `reconcile-host push`; its digest reference (`oci://...@sha256:...`).
    pub fn push(&self, module: &Path, repository_and_tag: &str, extra: &[&str]) -> String {
        let out = self.push_output(module, repository_and_tag, extra);
        assert!(
            out.status.success(),
            "push failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        stdout.lines().last().unwrap().to_string()
    }

    pub fn push_output(
        &self,
        module: &Path,
        repository_and_tag: &str,
        extra: &[&str],
    ) -> std::process::Output {
        Command::new(env!("CARGO_BIN_EXE_reconcile-host"))
            .arg("push")
            .arg(module)
            .arg(self.reference(repository_and_tag))
            .args(self.flags())
            .args(extra)
            .output()
            .unwrap()
    }

    /// Points `repository:tag` at the manifest `digest` (`sha256:...`) of the same repository, as
    /// `crane tag` does: only the manifest is written.
    pub fn tag(&self, repository: &str, digest: &str, tag: &str) {
        let manifest = self.manifest(repository, digest);
        let (status, body) = self.request(
            "PUT",
            &format!("/v2/{repository}/manifests/{tag}"),
            &manifest,
        );
        assert_eq!(
            status,
            201,
            "PUT manifest {tag}: {}",
            String::from_utf8_lossy(&body)
        );
    }

    /// The wasm layer digest of a manifest.
    pub fn layer(&self, repository: &str, digest: &str) -> String {
        let manifest = self.manifest(repository, digest);
        let manifest: serde_json::Value = serde_json::from_slice(&manifest).unwrap();
        manifest["layers"][0]["digest"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Flips every byte of a stored blob, keeping its size: what bit rot or a bad proxy would serve.
    pub fn corrupt(&self, digest: &str) {
        let (algorithm, hex) = digest.split_once(':').unwrap();
        let path = self.blobs.path().join(algorithm).join(hex);
        let bytes: Vec<u8> = std::fs::read(&path).unwrap().iter().map(|b| !b).collect();
        std::fs::write(path, bytes).unwrap();
    }

    /// The requests it served, one a line.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends `METHOD PATH` with `body` (a manifest, if any); the status code and the body.
    fn request(&self, method: &str, path: &str, body: &[u8]) -> (u16, Vec<u8>) {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        let manifest = "application/vnd.oci.image.manifest.v1+json";
        write!(
            stream,
            "{method} {path} HTTP/1.0\r\nHost: {}\r\nAccept: {manifest}\r\nContent-Type: {manifest}\r\nContent-Length: {}\r\n\r\n",
            self.addr,
            body.len()
        )
        .unwrap();
        stream.write_all(body).unwrap();
        let mut response = Vec::new();
        stream.read_to_end(&mut response).unwrap();
        let split = response.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        let status = String::from_utf8_lossy(&response[..split])
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        (status, response[split + 4..].to_vec())
    }

    fn manifest(&self, repository: &str, digest: &str) -> Vec<u8> {
        let (status, body) =
            self.request("GET", &format!("/v2/{repository}/manifests/{digest}"), &[]);
        assert_eq!(
            status,
            200,
            "GET manifest {digest}: {}",
            String::from_utf8_lossy(&body)
        );
        body
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.stop();
    }
}
