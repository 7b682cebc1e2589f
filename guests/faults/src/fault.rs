//! The faults, one per `spec.fault` value.

use super::{Level, Parent, Response, config_map, emit, respond};
use serde_json::json;
use std::hint::black_box;

/// What `spec.fault` asks for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    /// No fault: one ConfigMap `<name>-cm`, status `{"ok": true}`.
    None,
    /// `label:<text>`: the same ConfigMap with an extra label `variant: <text>`.
    Label(String),
    /// `fixed-name:<name>`: the well-behaved ConfigMap, but named `<name>` (whoever else has it).
    FixedName(String),
    /// `panic:<message>`: panics with `<message>`, which the host should report.
    Panic(String),
    /// `big-status`: the well-behaved ConfigMap with a status of ~100 KiB.
    BigStatus,
    /// `trap`: panics, which (with `panic = "abort"`) traps.
    Trap,
    /// `loop`: spins forever.
    Loop,
    /// `grow`: allocates 1 MiB chunks without bound, touching every page.
    Grow,
    /// `invalid-json`: a child that is not JSON.
    InvalidJson,
    /// `oversized`: one child of ~8 MiB.
    Oversized,
    /// `cluster-role-binding`: a ClusterRoleBinding "pwn" to cluster-admin.
    ClusterRoleBinding,
    /// `other-namespace`: a ConfigMap in kube-system.
    OtherNamespace,
    /// `bad-name`: a ConfigMap named "Not_A_Valid_Name".
    BadName,
    /// `many-children`: 10000 ConfigMaps.
    ManyChildren,
    /// `open-file`: reads /etc/hostname.
    OpenFile,
    /// `read-env`: reports the environment variable names and arguments it sees.
    ReadEnv,
    /// `log`: logs at each level and prints to stdout and stderr.
    Log,
    /// `flood`: prints 1 MiB to stdout, far past the host's per-call cap, then answers as `None`.
    Flood,
    /// `remember:<text>`: counts the copies of `<text>` reversed that earlier calls left in linear
    /// memory (status `{"seen": n}`), then leaves its own (see `remember`).
    Remember(String),
}

impl Fault {
    /// Parses a `spec.fault` value.
    pub(crate) fn parse(s: &str) -> Result<Fault, String> {
        if let Some(text) = s.strip_prefix("label:") {
            return Ok(Fault::Label(text.to_owned()));
        }
        if let Some(message) = s.strip_prefix("panic:") {
            return Ok(Fault::Panic(message.to_owned()));
        }
        if let Some(text) = s.strip_prefix("remember:") {
            return Ok(Fault::Remember(text.to_owned()));
        }
        if let Some(name) = s.strip_prefix("fixed-name:") {
            return Ok(Fault::FixedName(name.to_owned()));
        }
        Ok(match s {
            "" | "none" => Fault::None,
            "trap" => Fault::Trap,
            "big-status" => Fault::BigStatus,
            "loop" => Fault::Loop,
            "grow" => Fault::Grow,
            "invalid-json" => Fault::InvalidJson,
            "oversized" => Fault::Oversized,
            "cluster-role-binding" => Fault::ClusterRoleBinding,
            "other-namespace" => Fault::OtherNamespace,
            "bad-name" => Fault::BadName,
            "many-children" => Fault::ManyChildren,
            "open-file" => Fault::OpenFile,
            "read-env" => Fault::ReadEnv,
            "log" => Fault::Log,
            "flood" => Fault::Flood,
            other => return Err(format!("unknown spec.fault {other:?}")),
        })
    }

    /// Misbehaves as asked for `parent`.
    pub(crate) fn run(self, parent: &Parent) -> Result<Response, String> {
        let ok = Some(json!({ "ok": true }));
        let namespace = parent.namespace.as_deref();
        let none = || json!({ "fault": "none" });
        Ok(match self {
            Fault::None => respond(vec![parent.own_config_map(None)], ok),
            Fault::Label(text) => respond(vec![parent.own_config_map(Some(&text))], ok),
            Fault::FixedName(name) => respond(vec![config_map(&name, namespace, none(), None)], ok),
            Fault::Panic(message) => panic!("{message}"),
            Fault::BigStatus => {
                let status = json!({ "blob": "x".repeat(100 << 10) });
                respond(vec![parent.own_config_map(None)], Some(status))
            }
            Fault::Trap => panic!("fault: trap"),
            Fault::Loop => {
                let mut n = 0u64;
                loop {
                    n = black_box(n.wrapping_add(1));
                }
            }
            Fault::Grow => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    let mut chunk = vec![0u8; 1 << 20];
                    // Fresh memory is zero already: write to each page so that it is really used.
                    for byte in chunk.iter_mut().step_by(4096) {
                        *byte = 1;
                    }
                    hoard.push(black_box(chunk));
                }
            }
            Fault::InvalidJson => respond(vec!["{\"kind\": this is not JSON".into()], ok),
            Fault::Oversized => {
                let blob = "x".repeat(8 << 20);
                let data = json!({ "blob": blob });
                let name = format!("{}-cm", parent.name);
                respond(vec![config_map(&name, namespace, data, None)], ok)
            }
            Fault::ClusterRoleBinding => {
                let binding = json!({
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRoleBinding",
                    "metadata": { "name": "pwn" },
                    "roleRef": {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "ClusterRole",
                        "name": "cluster-admin",
                    },
                    "subjects": [{
                        "kind": "ServiceAccount",
                        "name": "default",
                        "namespace": namespace.unwrap_or("default"),
                    }],
                });
                respond(vec![binding.to_string()], ok)
            }
            Fault::OtherNamespace => {
                let name = format!("{}-cm", parent.name);
                let child = config_map(&name, Some("kube-system"), none(), None);
                respond(vec![child], ok)
            }
            Fault::BadName => {
                let child = config_map("Not_A_Valid_Name", namespace, none(), None);
                respond(vec![child], ok)
            }
            Fault::ManyChildren => {
                let children = (0..10_000)
                    .map(|i| {
                        let name = format!("{}-cm-{i}", parent.name);
                        config_map(&name, namespace, none(), None)
                    })
                    .collect();
                respond(children, ok)
            }
            Fault::OpenFile => match std::fs::read_to_string("/etc/hostname") {
                Ok(contents) => respond(Vec::new(), Some(json!({ "read": contents }))),
                Err(e) => return Err(format!("open failed: {e}")),
            },
            Fault::ReadEnv => {
                let env: Vec<String> = std::env::vars_os()
                    .map(|(name, _)| name.to_string_lossy().into_owned())
                    .collect();
                let args: Vec<String> = std::env::args_os()
                    .map(|arg| arg.to_string_lossy().into_owned())
                    .collect();
                respond(Vec::new(), Some(json!({ "env": env, "args": args })))
            }
            Fault::Log => {
                for (level, name) in [
                    (Level::Trace, "trace"),
                    (Level::Debug, "debug"),
                    (Level::Info, "info"),
                    (Level::Warn, "warn"),
                    (Level::Error, "error"),
                ] {
                    emit(level, &format!("fault log: {name}"));
                }
                println!("fault log: stdout");
                eprintln!("fault log: stderr");
                respond(vec![parent.own_config_map(None)], ok)
            }
            Fault::Remember(text) => {
                // Reversed, so that the request's own copy of the text is not counted.
                let marker: Vec<u8> = text.bytes().rev().collect();
                let seen = crate::remember::count_then_leave(&marker);
                respond(
                    vec![parent.own_config_map(None)],
                    Some(json!({ "seen": seen })),
                )
            }
            Fault::Flood => {
                let line = "x".repeat(1023);
                for _ in 0..1024 {
                    println!("{line}");
                }
                respond(vec![parent.own_config_map(None)], ok)
            }
        })
    }
}
