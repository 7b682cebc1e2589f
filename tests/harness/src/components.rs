//! Command lines of the stack's components, in the style of controller-runtime's envtest plus the
//! controllers envtest leaves out, and the fake node kwok manages.
//!
//! Everything listens on 127.0.0.1 only; the controller manager and the scheduler serve no HTTPS
//! (`--secure-port=0`), so that only etcd's two ports and the API server's need to be free.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::certs::Pki;

/// Annotation (and value) that marks the nodes kwok fakes; kwok manages no other node.
pub const KWOK_NODE_ANNOTATION: (&str, &str) = ("kwok.x-k8s.io/node", "fake");

/// Name of the one fake node.
pub const NODE_NAME: &str = "kwok-node-0";

/// Controllers the tests rely on: deployments need replicasets, namespaces need deleting, every
/// namespace needs its `default` ServiceAccount, owner references need the garbage collector, and
/// TokenRequest-less legacy token Secrets need the token controller. These are the 1.36 names (the
/// pre-1.28 short names such as `garbagecollector` are still accepted as aliases).
pub const CONTROLLERS: &str = "garbage-collector-controller,deployment-controller,\
replicaset-controller,namespace-controller,serviceaccount-controller,serviceaccount-token-controller";

/// Ports and paths shared by the command lines.
pub struct Layout<'a> {
    pub dir: &'a Path,
    pub pki: &'a Pki,
    pub etcd_client_port: u16,
    pub etcd_peer_port: u16,
    pub apiserver_port: u16,
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

impl Layout<'_> {
    /// etcd, single member, data in the cluster dir; fsync off because the data is thrown away.
    pub fn etcd(&self) -> Vec<String> {
        let client = format!("http://127.0.0.1:{}", self.etcd_client_port);
        let peer = format!("http://127.0.0.1:{}", self.etcd_peer_port);
        vec![
            "--name=default".into(),
            format!("--data-dir={}", path(&self.dir.join("etcd"))),
            format!("--listen-client-urls={client}"),
            format!("--advertise-client-urls={client}"),
            format!("--listen-peer-urls={peer}"),
            format!("--initial-advertise-peer-urls={peer}"),
            format!("--initial-cluster=default={peer}"),
            "--unsafe-no-fsync=true".into(),
            "--log-level=warn".into(),
        ]
    }

    /// kube-apiserver with x509 client auth, service-account tokens and RBAC enforced.
    pub fn apiserver(&self) -> Vec<String> {
        let pki = self.pki;
        vec![
            format!("--etcd-servers=http://127.0.0.1:{}", self.etcd_client_port),
            "--bind-address=127.0.0.1".into(),
            "--advertise-address=127.0.0.1".into(),
            format!("--secure-port={}", self.apiserver_port),
            format!("--cert-dir={}", path(&self.dir.join("apiserver"))),
            format!("--tls-cert-file={}", path(&pki.serving.cert)),
            format!("--tls-private-key-file={}", path(&pki.serving.key)),
            format!("--client-ca-file={}", path(&pki.ca_cert)),
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
            format!("--service-account-key-file={}", path(&pki.sa_pub)),
            format!("--service-account-signing-key-file={}", path(&pki.sa_key)),
            "--authorization-mode=Node,RBAC".into(),
            "--service-cluster-ip-range=10.0.0.0/24".into(),
            "--allow-privileged=true".into(),
            // That plugin taints every new Node `not-ready:NoSchedule` until the node-lifecycle
            // controller sees it Ready; that controller would also evict pods whenever kwok's
            // jittered heartbeat runs late on a busy machine. Without both, the kwok node is
            // schedulable as soon as it exists.
            "--disable-admission-plugins=TaintNodesByCondition".into(),
            // No Endpoints for the `kubernetes` Service: 127.0.0.1 is not a valid endpoint address
            // and nothing in the tests dials the API server through the Service.
            "--endpoint-reconciler-type=none".into(),
            "--profiling=false".into(),
            // Every write, with who made it (user and User-Agent): the record a test reads to prove
            // what a process wrote, not only what it ended up with (`TestCluster::audited_writes`).
            format!("--audit-policy-file={}", path(&self.audit_policy_path())),
            format!("--audit-log-path={}", path(&self.audit_log_path())),
            "--audit-log-format=json".into(),
        ]
    }

    /// Where the audit policy is written.
    pub fn audit_policy_path(&self) -> PathBuf {
        self.dir.join("audit-policy.yaml")
    }

    /// Where the API server writes its audit log.
    pub fn audit_log_path(&self) -> PathBuf {
        self.dir.join(AUDIT_LOG)
    }

    /// kube-controller-manager with its own identity and one ServiceAccount per controller, like
    /// kubeadm sets it up, so that RBAC applies to the controllers as in a real cluster.
    pub fn controller_manager(&self, kubeconfig: &Path) -> Vec<String> {
        vec![
            format!("--kubeconfig={}", path(kubeconfig)),
            format!("--controllers={CONTROLLERS}"),
            "--leader-elect=false".into(),
            "--use-service-account-credentials=true".into(),
            format!(
                "--service-account-private-key-file={}",
                path(&self.pki.sa_key)
            ),
            format!("--root-ca-file={}", path(&self.pki.ca_cert)),
            "--secure-port=0".into(),
            "--cluster-name=testcluster".into(),
            "--profiling=false".into(),
        ]
    }

    /// kube-scheduler, so that Pods get bound to the kwok node.
    pub fn scheduler(&self, kubeconfig: &Path) -> Vec<String> {
        vec![
            format!("--kubeconfig={}", path(kubeconfig)),
            "--leader-elect=false".into(),
            "--secure-port=0".into(),
            "--profiling=false".into(),
        ]
    }

    /// kwok, acting as the kubelet of the annotated node only, with its default stages from `config`.
    pub fn kwok(&self, kubeconfig: &Path, config: &Path) -> Vec<String> {
        let (key, value) = KWOK_NODE_ANNOTATION;
        vec![
            format!("--kubeconfig={}", path(kubeconfig)),
            format!("--config={}", path(config)),
            "--manage-all-nodes=false".into(),
            format!("--manage-nodes-with-annotation-selector={key}={value}"),
            "--node-ip=127.0.0.1".into(),
            // Pod IPs kwok hands out; outside the service range.
            "--cidr=10.244.0.0/16".into(),
        ]
    }

    /// Where kwok's stage configuration is written.
    pub fn kwok_config_path(&self) -> PathBuf {
        self.dir.join("kwok.yaml")
    }
}

/// The audit log's file name in the cluster directory.
pub const AUDIT_LOG: &str = "audit.log";

/// The audit policy: writes at the Metadata level (who, what, when, the answer's code), nothing else.
pub const AUDIT_POLICY: &str = r#"apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    verbs: ["create", "update", "patch", "delete", "deletecollection"]
  - level: None
"#;

/// kwok's default node and pod stages (see the file's header).
pub const KWOK_STAGES: &str = include_str!("kwok-stages.yaml");

/// The fake node: schedulable, sized so that test workloads, and a benchmark of 10,000 MyApps on one
/// control plane, always fit.
pub fn node() -> Value {
    let (key, value) = KWOK_NODE_ANNOTATION;
    let resources = json!({ "cpu": "1000", "memory": "4Ti", "pods": "20000" });
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": NODE_NAME,
            "annotations": { key: value, "node.alpha.kubernetes.io/ttl": "0" },
            "labels": {
                "type": "kwok",
                "kubernetes.io/hostname": NODE_NAME,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
            },
        },
        "status": { "allocatable": resources, "capacity": resources },
    })
}
