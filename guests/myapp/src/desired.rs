//! What the rule writes: the Deployment, as the seed's `create_deployment` builds it, and the status.
//!
//! Typed and serialized straight to text: building a `serde_json::Value` tree first cost an
//! allocation per key and per string, which is most of a reconcile in wasm.

use serde::Serialize;
use serde_json::Value;

/// `apps/v1` Deployment `<name>-deploy`: labels and selector `app: <name>`, one container `main`, with
/// the parent's resources if it has any.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Deployment<'a> {
    api_version: &'static str,
    kind: &'static str,
    metadata: ObjectMeta<'a>,
    spec: DeploymentSpec<'a>,
}

#[derive(Serialize)]
struct ObjectMeta<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<&'a str>,
    labels: Labels<'a>,
}

#[derive(Clone, Copy, Serialize)]
struct Labels<'a> {
    app: &'a str,
    /// Only on the Deployment itself, and only in the `variant-b` build.
    #[serde(
        rename = "example.com/variant",
        skip_serializing_if = "Option::is_none"
    )]
    variant: Option<&'static str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DeploymentSpec<'a> {
    replicas: i32,
    selector: Selector<'a>,
    template: PodTemplate<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Selector<'a> {
    match_labels: Labels<'a>,
}

#[derive(Serialize)]
struct PodTemplate<'a> {
    metadata: TemplateMeta<'a>,
    spec: PodSpec<'a>,
}

#[derive(Serialize)]
struct TemplateMeta<'a> {
    labels: Labels<'a>,
}

#[derive(Serialize)]
struct PodSpec<'a> {
    containers: [Container<'a>; 1],
}

#[derive(Serialize)]
struct Container<'a> {
    name: &'static str,
    image: &'a str,
    ports: [ContainerPort; 1],
    /// Left out when the parent sets none, so that such Deployments read as before v1beta1.
    #[serde(skip_serializing_if = "Option::is_none")]
    resources: Option<&'a Value>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ContainerPort {
    container_port: u16,
}

impl<'a> Deployment<'a> {
    pub fn new(
        app: &'a str,
        namespace: Option<&'a str>,
        name: &'a str,
        replicas: i32,
        image: &'a str,
        resources: Option<&'a Value>,
    ) -> Self {
        let labels = Labels { app, variant: None };
        let variant = if cfg!(feature = "variant-b") {
            Some("b")
        } else if cfg!(feature = "variant-c") && replicas >= 3 {
            Some("c")
        } else {
            None
        };
        Deployment {
            api_version: "apps/v1",
            kind: "Deployment",
            metadata: ObjectMeta {
                name,
                namespace,
                labels: Labels { app, variant },
            },
            spec: DeploymentSpec {
                replicas,
                selector: Selector {
                    match_labels: labels,
                },
                template: PodTemplate {
                    metadata: TemplateMeta { labels },
                    spec: PodSpec {
                        containers: [Container {
                            name: "main",
                            image,
                            ports: [ContainerPort { container_port: 80 }],
                            resources,
                        }],
                    },
                },
            },
        }
    }
}

/// The guest-owned status: the phase and the replica counts.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Status {
    pub phase: &'static str,
    pub replicas: i32,
    pub ready_replicas: i64,
}
