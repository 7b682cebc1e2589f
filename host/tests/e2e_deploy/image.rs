//! The image `make image` builds, proven without a container engine: pushed to the test registry,
//! pulled back and unpacked as a runtime would, its config checked (a non-root user, the entry point,
//! no shell), and the unpacked host run as deploy/ runs it: in a root of its own (chroot, with a /proc
//! of its own and nothing of this machine's), as the image's user, with its ServiceAccount's
//! in-cluster credentials where the kubelet mounts them and the module where deploy/ mounts its
//! ConfigMap. The demo parent converges.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};
use testcluster::{TestCluster, failure_guard};

use super::{HOST_NAMESPACE, apply_deploy, demo_app_converges, shipped_args, yaml_documents};
use crate::common::guests::{component, go_tools, repo_root};
use crate::common::http;
use crate::common::monitoring::{LEASE_ACQUIRED, Scrape};
use crate::common::ports::free_port;
use crate::common::registry::Registry;

/// The image's user, as the Deployments' securityContext names it.
const IMAGE_USER: &str = "65532:65532";

/// The image tarball: `RECONCILE_HOST_IMAGE` (as `make test` sets it), else `make image`'s output.
fn image_tarball() -> PathBuf {
    if let Some(path) = std::env::var_os("RECONCILE_HOST_IMAGE") {
        return path.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target"));
    let path = target.join("image/reconcile-host.tar");
    assert!(
        path.exists(),
        "no image at {}: run `make image` (`make test` does)",
        path.display()
    );
    path
}

/// Runs the image tool (tests/registry/image) with `args`.
fn image_tool(args: &[&str]) {
    let tool = go_tools("RECONCILE_HOST_REGISTRY_BIN", "tests/registry/build.sh").join("image");
    let out = Command::new(tool).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "image {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The unpacked host, running in its root; killed (with everything in its PID namespace) on drop.
struct Contained {
    child: Child,
    log: PathBuf,
}

impl Contained {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Contained {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- the image's host log ---\n{}", self.log());
        }
    }
}

/// Writes `body` at `path` under `root`, readable by everyone (as the kubelet mounts Secrets and
/// ConfigMaps: mode 0644).
fn mount(root: &Path, path: &str, body: &[u8]) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, body).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
}

/// `/reconcile-host COMMAND ARGS` in `root` as a runtime starts a container: new mount and PID
/// namespaces, a /proc of its own, the OCI runtime spec's default devices (null, zero, full, random,
/// urandom: a static glibc host reads its randomness from /dev/urandom), then the image's root and
/// user, with only the environment given (`path` for the start script's mount and chroot).
fn contained(root: &Path, command: &[&str], args: &[String], path: &str) -> Command {
    let start = r#"set -e; for d in null zero full random urandom; do : > "$0/dev/$d"; mount --bind "/dev/$d" "$0/dev/$d"; done; exec chroot --userspec="$1" "$0" /reconcile-host "${@:2}""#;
    std::fs::create_dir_all(root.join("dev")).unwrap();
    std::fs::create_dir_all(root.join("proc")).unwrap();
    let mut unshare = Command::new("unshare");
    unshare
        .args(["--mount", "--pid", "--fork", "--kill-child"])
        .arg(format!("--mount-proc={}", root.join("proc").display()))
        .args(["bash", "-c", start])
        .arg(root)
        .arg(IMAGE_USER)
        .args(command)
        .args(args)
        .env_clear()
        .envs([("PATH", path), ("RUST_LOG", "info")])
        .stdin(Stdio::null());
    unshare
}

#[tokio::test]
async fn the_image_pulled_from_a_registry_runs_as_deploy_runs_it() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    apply_deploy(cluster);

    // Through a registry and back.
    let registry = Registry::start();
    let reference = format!("{}/reconcile-host:test", registry.addr);
    let tarball = image_tarball();
    image_tool(&[
        "push",
        "-insecure",
        "-tar",
        tarball.to_str().unwrap(),
        "-ref",
        &reference,
    ]);
    let unpacked = tempfile::tempdir().unwrap();
    let (root, config) = (
        unpacked.path().join("root"),
        unpacked.path().join("config.json"),
    );
    image_tool(&[
        "export",
        "-insecure",
        "-ref",
        &reference,
        "-dir",
        root.to_str().unwrap(),
        "-config",
        config.to_str().unwrap(),
    ]);

    // Its config and contents: the user deploy/ runs it as, the entry point, no shell to exec into.
    let config: Value = serde_json::from_slice(&std::fs::read(&config).unwrap()).unwrap();
    assert_eq!(config["config"]["User"], IMAGE_USER);
    assert_eq!(config["config"]["Entrypoint"], json!(["/reconcile-host"]));
    assert_eq!(
        (config["os"].as_str(), config["architecture"].as_str()),
        (Some("linux"), Some("amd64"))
    );
    let deployment = &yaml_documents("deployment.yaml")[0];
    let pod_security = &deployment["spec"]["template"]["spec"]["securityContext"];
    assert_eq!(
        format!(
            "{}:{}",
            pod_security["runAsUser"], pod_security["runAsGroup"]
        ),
        IMAGE_USER
    );
    let image = deployment["spec"]["template"]["spec"]["containers"][0]["image"].as_str();
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(image, Some(format!("reconcile-host:{version}").as_str()));
    for shell in ["bin", "usr", "sbin", "bin/sh"] {
        assert!(!root.join(shell).exists(), "the image has /{shell}");
    }
    assert!(root.join("etc/ssl/certs/ca-certificates.crt").is_file());

    // What the kubelet and deploy/ would mount: the ServiceAccount's token, CA and namespace; the
    // module ConfigMap at /modules; the cache emptyDir (the image's user owns it).
    let kubeconfig = cluster
        .service_account_kubeconfig(HOST_NAMESPACE, "reconcile-host")
        .await
        .unwrap();
    let kubeconfig: Value = serde_json::from_slice(&std::fs::read(kubeconfig).unwrap()).unwrap();
    let token = kubeconfig["users"][0]["user"]["token"].as_str().unwrap();
    let ca = kubeconfig["clusters"][0]["cluster"]["certificate-authority"]
        .as_str()
        .unwrap();
    let account = "var/run/secrets/kubernetes.io/serviceaccount";
    mount(&root, &format!("{account}/token"), token.as_bytes());
    mount(
        &root,
        &format!("{account}/ca.crt"),
        &std::fs::read(ca).unwrap(),
    );
    mount(
        &root,
        &format!("{account}/namespace"),
        HOST_NAMESPACE.as_bytes(),
    );
    let module = std::fs::read(component("guest_myapp")).unwrap();
    mount(&root, "modules/myapp.wasm", &module);
    std::fs::create_dir_all(root.join("cache")).unwrap();
    std::os::unix::fs::chown(root.join("cache"), Some(65532), Some(65532)).unwrap();

    // What the kubelet writes for a Pod with `hostAliases` (a registry by a name of the cluster's
    // choosing) and its resolver: the image's host pushes a module to the registry by that name.
    mount(
        &root,
        "etc/hosts",
        b"127.0.0.1 localhost\n127.0.0.1 registry.cluster.test\n",
    );
    mount(
        &root,
        "etc/resolv.conf",
        b"nameserver 127.0.0.1\noptions timeout:1 attempts:1\n",
    );
    let port = registry.addr.rsplit_once(':').unwrap().1;
    let by_name = format!("registry.cluster.test:{port}");
    let module_reference = format!("oci://{by_name}/myapp:image");
    let path = std::env::var("PATH").unwrap_or_default();
    let push = [module_reference, "--oci-plain-http".into(), by_name];
    let pushed = contained(&root, &["push", "/modules/myapp.wasm"], &push, &path)
        .output()
        .unwrap();
    assert!(
        pushed.status.success(),
        "push by name from the image: {}",
        String::from_utf8_lossy(&pushed.stderr)
    );

    let namespace = cluster.namespace("image").await.unwrap();
    let mut args = shipped_args(
        &namespace,
        Path::new("/modules/myapp.wasm"),
        Path::new("/cache"),
        free_port(),
    );
    let metrics = format!("127.0.0.1:{}", free_port());
    args.extend([
        format!("--metrics-addr={metrics}"),
        // Its own Leases and ring: the other test's host holds the shipped ones in this namespace,
        // and as a member of one ring with it, it would be assigned parents it does not watch.
        "--name=myapp-image".into(),
    ]);
    let server = cluster.server().trim_start_matches("https://");
    let (host, port) = server.rsplit_once(':').unwrap();
    let log = unpacked.path().join("host.log");
    let out = std::fs::File::create(&log).unwrap();
    let child = contained(&root, &["run"], &args, &path)
        .env("POD_NAMESPACE", HOST_NAMESPACE)
        .env("POD_NAME", "image-test-host")
        .env("KUBERNETES_SERVICE_HOST", host)
        .env("KUBERNETES_SERVICE_PORT", port)
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .expect("unshare (util-linux) runs the unpacked image");
    let image_host = Contained { child, log };

    let client = cluster.client().await.unwrap();
    let what = "demo-app Ready, reconciled by the image's host";
    demo_app_converges(&client, &namespace, what).await;
    let log = image_host.log();
    let led = Scrape::of(&metrics).value(LEASE_ACQUIRED);
    assert!(led >= Some(1.0), "the image's host never led:\n{log}");
    assert!(!log.contains("forbidden"), "{log}");
    assert_eq!(http::get(&metrics, "/readyz").unwrap().0, 200);
}
