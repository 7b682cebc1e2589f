//! `make bench` (guest part): the MyApp guest called with a fresh instance and with a reused instance,
//! against the same logic compiled natively, side by side in one run, printed as ratios.
//! Each figure is the median over batches of calls, after a warm-up.

#[path = "../tests/common/guests.rs"]
mod guests;

use std::hint::black_box;
use std::time::{Duration, Instant};

use reconcile_host::guest::{Module, Request, Runtime, RuntimeConfig};
use serde_json::json;

const BATCHES: usize = 51;
const CALLS_PER_BATCH: usize = 200;

fn median_per_call(mut f: impl FnMut()) -> Duration {
    for _ in 0..CALLS_PER_BATCH {
        f();
    }
    let mut batches: Vec<Duration> = (0..BATCHES)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..CALLS_PER_BATCH {
                f();
            }
            start.elapsed() / CALLS_PER_BATCH as u32
        })
        .collect();
    batches.sort();
    batches[BATCHES / 2]
}

fn main() {
    let parent = json!({
        "apiVersion": "example.com/v1alpha1", "kind": "MyApp",
        "metadata": {"name": "demo-app", "namespace": "default", "uid": "6f1c3f3e-0000-4000-8000-000000000001",
                     "generation": 1, "resourceVersion": "1234"},
        "spec": {"replicas": 3, "image": "nginx:1.23"}
    })
    .to_string();
    let observed = vec![
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "demo-app-deploy", "namespace": "default"},
            "spec": {"replicas": 3},
            "status": {"replicas": 3, "readyReplicas": 3}
        })
        .to_string(),
    ];
    let request = Request {
        parent: parent.clone(),
        children: observed.clone(),
        finalizing: false,
    };
    let path = guests::component("guest_myapp");

    let native = median_per_call(|| {
        black_box(guest_myapp::reconcile(black_box(&parent), black_box(&observed), false).unwrap());
    });
    let fresh_rt = Runtime::new(RuntimeConfig::default()).unwrap();
    let fresh_module = Module::load_file(&fresh_rt, &path).unwrap();
    let fresh = median_per_call(|| {
        black_box(fresh_module.call_raw("bench", black_box(&request)).unwrap());
    });
    let reuse_rt = Runtime::new(RuntimeConfig::default().reuse_instance_calls(u32::MAX)).unwrap();
    let reused_module = Module::load_file(&reuse_rt, &path).unwrap();
    let reused = median_per_call(|| {
        black_box(
            reused_module
                .call_raw("bench", black_box(&request))
                .unwrap(),
        );
    });

    let ratio = |d: Duration| d.as_secs_f64() / native.as_secs_f64();
    println!(
        "MyApp guest call (median per call, {BATCHES} batches of {CALLS_PER_BATCH}; component {} bytes)",
        fresh_module.size()
    );
    println!("  native Rust (same logic)  {:>9.2?}", native);
    println!(
        "  wasm, fresh instance      {:>9.2?}   {:>5.2}x native   (target <= 5x)",
        fresh,
        ratio(fresh)
    );
    println!(
        "  wasm, reused instance     {:>9.2?}   {:>5.2}x native   (target <= 1.5x)",
        reused,
        ratio(reused)
    );
}
