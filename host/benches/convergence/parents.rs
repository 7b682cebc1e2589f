//! The benchmarks' parents: MyApps created the way a burst of users would.

use anyhow::Result;
use futures::StreamExt;
use kube::Client;
use kube::api::PostParams;
use serde_json::json;

use crate::myapp;

/// A benchmark's setting (how many parents, how long): the number in the environment variable
/// `name`, else `default`.
pub fn setting<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Creates MyApps `app-<i>`, `CONCURRENCY` at a time, yielding each as it is created.
pub fn create<'a>(
    client: &'a Client,
    namespace: &'a str,
    range: std::ops::Range<usize>,
) -> impl futures::Stream<Item = Result<kube::api::DynamicObject>> + 'a {
    let api = myapp::myapps(client, namespace);
    futures::stream::iter(range)
        .map(move |i| {
            let api = api.clone();
            async move {
                let object = serde_json::from_value(json!({
                    "apiVersion": "example.com/v1alpha1", "kind": "MyApp",
                    "metadata": {"name": format!("app-{i}")},
                    "spec": {"replicas": 1, "image": "nginx:1.23"},
                }))?;
                Ok(api.create(&PostParams::default(), &object).await?)
            }
        })
        .buffer_unordered(crate::CONCURRENCY)
}
