//! What the API server served, from its own `apiserver_request_total`: the writes (and the gets and
//! lists) a contender caused, by resource and verb, across all clients. Taken before and after a
//! measurement; the difference per parent is the accounting of where a contender's requests went,
//! beside the floor's.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::Result;
use kube::Client;

pub const WRITE_VERBS: [&str; 5] = ["POST", "PUT", "PATCH", "APPLY", "DELETE"];
/// Watches are left out: one long request each, not a cost per parent.
const READ_VERBS: [&str; 2] = ["GET", "LIST"];

/// The API server's request counters, keyed `resource[/subresource] VERB`.
#[derive(Clone, Default)]
pub struct Requests(BTreeMap<String, f64>);

impl Requests {
    pub async fn take(client: &Client) -> Result<Requests> {
        let request = axum::http::Request::get("/metrics").body(Vec::new())?;
        let metrics = client.request_text(request).await?;
        let mut writes = BTreeMap::new();
        for line in metrics.lines() {
            let Some(rest) = line.strip_prefix("apiserver_request_total{") else {
                continue;
            };
            let label = |name: &str| {
                let start = rest.find(&format!("{name}=\""))? + name.len() + 2;
                rest[start..].split('"').next()
            };
            let (Some(verb), Some(resource)) = (label("verb"), label("resource")) else {
                continue;
            };
            if !WRITE_VERBS.contains(&verb) && !READ_VERBS.contains(&verb) {
                continue;
            }
            let Some(value) = line
                .rsplit_once(' ')
                .and_then(|(_, v)| v.parse::<f64>().ok())
            else {
                continue;
            };
            let key = match label("subresource").filter(|s| !s.is_empty()) {
                Some(sub) => format!("{resource}/{sub} {verb}"),
                None => format!("{resource} {verb}"),
            };
            *writes.entry(key).or_default() += value;
        }
        Ok(Requests(writes))
    }

    /// What was served since `before`, per parent.
    pub fn since(&self, before: &Requests, parents: usize) -> Requests {
        let per_parent = self.0.iter().filter_map(|(key, now)| {
            let delta = now - before.0.get(key).copied().unwrap_or(0.0);
            (delta > 0.0).then(|| (key.clone(), delta / parents as f64))
        });
        Requests(per_parent.collect())
    }

    /// The writes a MyApp controller makes: Deployments (not their status, which the cluster's
    /// deployment controller writes) and MyApp statuses.
    pub fn controller(&self) -> f64 {
        self.0
            .iter()
            .filter(|(key, _)| key.starts_with("deployments ") || key.starts_with("myapps/status "))
            .filter(|(key, _)| WRITE_VERBS.iter().any(|verb| key.ends_with(verb)))
            .map(|(_, n)| n)
            .sum()
    }

    /// The writes on `resource` (or `resource/subresource`) by the given verbs, per parent.
    // The sharding benchmark's (the assignment label, the Leases); the convergence one has no use.
    #[allow(dead_code)]
    pub fn writes_on(&self, resource: &str, verbs: &[&str]) -> f64 {
        // Folded from +0.0: an empty f64 sum is -0.0, printed "-0.00".
        (verbs.iter())
            .filter_map(|verb| self.0.get(&format!("{resource} {verb}")))
            .fold(0.0, |sum, n| sum + n)
    }

    /// The requests on `resource` itself (not its subresources), all verbs: their sum and
    /// `VERB n.nn` each.
    pub fn on(&self, resource: &str) -> (f64, String) {
        let prefix = format!("{resource} ");
        let verbs: Vec<_> = (self.0.iter())
            .filter_map(|(key, n)| Some((key.strip_prefix(&prefix)?, n)))
            .collect();
        let by_verb: Vec<_> = verbs.iter().map(|(v, n)| format!("{v} {n:.2}")).collect();
        (verbs.iter().map(|(_, n)| **n).sum(), by_verb.join(", "))
    }

    /// One line per resource and verb, `resource VERB n.nn`, those under 0.01 left out.
    pub fn breakdown(&self, indent: &str) -> String {
        let mut out = String::new();
        for (key, n) in self.0.iter().filter(|(_, n)| **n >= 0.01) {
            let _ = writeln!(out, "{indent}{key:<36} {n:>6.2}");
        }
        out
    }
}
