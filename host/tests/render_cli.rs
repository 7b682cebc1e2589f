//! `reconcile-host render` as a user runs it: the seed's manifest in, YAML out, clear errors.

mod common;

use std::process::{Command, Output};

use common::guests::{component, repo_root};

fn render(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_reconcile-host"))
        .arg("render")
        .args(args)
        .output()
        .expect("running reconcile-host render")
}

#[test]
fn renders_the_seed_demo_app() {
    let module = component("guest_myapp");
    let parent = repo_root().join("examples/myapp/myapp-instance.yaml");
    let out = render(&[
        "--module",
        module.to_str().unwrap(),
        "-f",
        parent.to_str().unwrap(),
        "--child",
        "apps/v1/Deployment",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let docs: Vec<serde_json::Value> = stdout
        .split("\n---")
        .filter_map(|doc| serde_norway::from_str::<serde_json::Value>(doc).ok())
        .filter(|doc| !doc.is_null())
        .collect();
    assert_eq!(docs.len(), 1, "{stdout}");
    let deployment = &docs[0];
    assert_eq!(deployment["kind"], "Deployment");
    assert_eq!(deployment["metadata"]["name"], "demo-app-deploy");
    assert_eq!(deployment["spec"]["replicas"], 3);
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.23"
    );
    assert!(
        stdout.contains("# status:") && stdout.contains("phase: Created"),
        "{stdout}"
    );
}

#[test]
fn a_guest_error_is_a_clear_message_and_a_failing_exit() {
    let module = component("guest_faults");
    let dir = tempfile::tempdir().unwrap();
    let parent = dir.path().join("parent.yaml");
    std::fs::write(
        &parent,
        "apiVersion: example.com/v1alpha1\nkind: MyApp\nmetadata: {name: x}\nspec: {fault: trap}\n",
    )
    .unwrap();
    let out = render(&[
        "--module",
        module.to_str().unwrap(),
        "-f",
        parent.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("guest trapped"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_refused_child_is_a_clear_message_and_a_failing_exit() {
    let module = component("guest_faults");
    let dir = tempfile::tempdir().unwrap();
    let parent = dir.path().join("parent.yaml");
    std::fs::write(&parent, "apiVersion: example.com/v1alpha1\nkind: MyApp\nmetadata: {name: x}\nspec: {fault: cluster-role-binding}\n").unwrap();
    let out = render(&[
        "-m",
        module.to_str().unwrap(),
        "-f",
        parent.to_str().unwrap(),
        "--child",
        "v1/ConfigMap",
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("ClusterRoleBinding") && stderr.contains("not allow-listed"),
        "{stderr}"
    );
}

#[test]
fn a_file_that_is_not_a_component_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let bogus = dir.path().join("bogus.wasm");
    std::fs::write(&bogus, "not wasm").unwrap();
    let parent = repo_root().join("examples/myapp/myapp-instance.yaml");
    let out = render(&[
        "-m",
        bogus.to_str().unwrap(),
        "-f",
        parent.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a WebAssembly component"));
}

#[test]
fn related_objects_from_a_file_are_matched_as_the_controller_matches_them() {
    let module = component("guest_configured");
    let case = repo_root().join("guests/configured/fixtures");
    let hash = |case_dir: &str| {
        let dir = case.join(case_dir);
        let out = render(&[
            "--module",
            module.to_str().unwrap(),
            "-f",
            dir.join("parent.yaml").to_str().unwrap(),
            "--related",
            dir.join("related.yaml").to_str().unwrap(),
            "-o",
            "json",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        doc["status"]["configMap"].as_str().unwrap().to_string()
    };
    // The same name in another namespace is not the parent's: the guest does not get it.
    assert_eq!(hash("found"), "Found");
    assert_eq!(hash("not-in-namespace"), "Missing");
}
