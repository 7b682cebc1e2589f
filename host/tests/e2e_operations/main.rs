//! What operators run beside the host, on one shared control plane: the monitoring component, the
//! host one RBAC verb short of deploy/, and the host where operations go wrong around it (throttled
//! by the API server, cut off from it). Not with the `run` tests: the monitoring overlay applies
//! deploy/, whose MyApp CRD serves v1beta1 through a webhook Service with no endpoints, which would
//! break their `kubectl get myapp`.

#[path = "../common/mod.rs"]
mod common;

mod deploy_rbac;
mod monitoring;
mod partition;
mod throttled;
