//! The soak's churn: each second the spec of one of the first [`HOT`] parents changes (its image, back
//! and forth: each of them once a minute), and every 10 s the oldest of the others is deleted and a
//! new one created, so the count stays and every name is new. The changed parents are never deleted,
//! so their Events must stay one series each: a parent changed every minute that gained an Event
//! object a minute would be a leak, in the API server's storage if not the host's.

use std::collections::VecDeque;

use anyhow::Result;
use futures::TryStreamExt;
use kube::Client;
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::json;

use crate::{myapp, parents};

/// The parents whose spec changes, each once every `HOT` seconds.
pub const HOT: usize = 60;

pub struct Churn {
    client: Client,
    namespace: String,
    /// The live parents' numbers past the first [`HOT`], oldest first.
    live: VecDeque<usize>,
    next: usize,
}

impl Churn {
    /// Over the parents `app-0` .. `app-<parents - 1>`, created beforehand.
    pub fn new(client: Client, namespace: String, parents: usize) -> Churn {
        Churn {
            client,
            namespace,
            live: (HOT..parents).collect(),
            next: parents,
        }
    }

    /// The churn of second `second`.
    pub async fn step(&mut self, second: u64) -> Result<()> {
        let api = myapp::myapps(&self.client, &self.namespace);
        let changed = second as usize % HOT;
        // Each round over the hot parents flips their image.
        let image = if (second as usize / HOT).is_multiple_of(2) {
            "nginx:1.23"
        } else {
            "nginx:1.24"
        };
        let spec = json!({"spec": {"image": image}});
        let name = format!("app-{changed}");
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&spec))
            .await?;
        if second.is_multiple_of(10) {
            let oldest = self.live.pop_front().expect("parents to churn");
            api.delete(&format!("app-{oldest}"), &DeleteParams::default())
                .await?;
            parents::create(&self.client, &self.namespace, self.next..self.next + 1)
                .try_collect::<Vec<_>>()
                .await?;
            self.live.push_back(self.next);
            self.next += 1;
        }
        Ok(())
    }
}
