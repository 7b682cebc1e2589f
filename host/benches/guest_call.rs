//! `make bench` (guest part): the MyApp guest called with a fresh instance and with a reused instance,
//! against the same logic compiled natively, side by side in one run, printed as ratios; then the same
//! MyApp logic as a Rust, a JavaScript and a Python component: size, compile time, cached load time and
//! per-call cost in both modes.
//! Each per-call figure is the median over batches of calls, after a warm-up.

#[path = "../tests/common/guests.rs"]
#[allow(dead_code)] // the tests' guest builds, of which the benchmark needs only some
mod guests;

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reconcile_host::guest::{Module, Request, Runtime, RuntimeConfig};
use serde_json::json;

const BATCHES: usize = 51;
/// A batch lasts about this long (at least 5 calls, at most 200), whatever one call costs.
const BATCH_TIME: Duration = Duration::from_millis(20);

fn median_per_call(mut f: impl FnMut()) -> Duration {
    let start = Instant::now();
    f();
    let estimate = start.elapsed().max(Duration::from_nanos(1));
    let calls = (BATCH_TIME.as_nanos() / estimate.as_nanos()).clamp(5, 200) as usize;
    for _ in 0..calls {
        f();
    }
    let mut batches: Vec<Duration> = (0..BATCHES)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..calls {
                f();
            }
            start.elapsed() / calls as u32
        })
        .collect();
    batches.sort();
    batches[BATCHES / 2]
}

/// One guest, measured the way the host uses it.
struct Figures {
    size: usize,
    /// `Module::load` with an empty artifact cache: compile, check the world, store the artifact.
    compile: Duration,
    /// `Module::load` again, from the artifact cache (another runtime, as after a restart).
    cached_load: Duration,
    fresh_call: Duration,
    reused_call: Duration,
}

fn load(runtime: &Arc<Runtime>, bytes: &[u8]) -> (Arc<Module>, Duration) {
    let start = Instant::now();
    let module = Module::load(runtime, bytes).expect("the guest loads");
    (module, start.elapsed())
}

fn measure(path: &Path, request: &Request) -> Figures {
    let bytes = std::fs::read(path).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let config = RuntimeConfig::default().cache_dir(Some(cache.path().to_path_buf()));
    let fresh_rt = Runtime::new(config.clone()).unwrap();
    let reuse_rt = Runtime::new(config.reuse_instance_calls(u32::MAX)).unwrap();
    let (fresh_module, compile) = load(&fresh_rt, &bytes);
    let (reused_module, cached_load) = load(&reuse_rt, &bytes);
    let call = |module: &Module| {
        black_box(module.call_raw("bench", black_box(request)).unwrap());
    };
    Figures {
        size: bytes.len(),
        compile,
        cached_load,
        fresh_call: median_per_call(|| call(&fresh_module)),
        reused_call: median_per_call(|| call(&reused_module)),
    }
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

    let native = median_per_call(|| {
        black_box(guest_myapp::reconcile(black_box(&parent), black_box(&observed), false).unwrap());
    });
    let rust = measure(&guests::component("guest_myapp"), &request);
    let ratio = |d: Duration| d.as_secs_f64() / native.as_secs_f64();
    println!(
        "MyApp guest call (median per call over {BATCHES} batches; component {} bytes)",
        rust.size
    );
    println!("  native Rust (same logic)  {:>9.2?}", native);
    println!(
        "  wasm, fresh instance      {:>9.2?}   {:>5.2}x native   (target <= 5x)",
        rust.fresh_call,
        ratio(rust.fresh_call)
    );
    println!(
        "  wasm, reused instance     {:>9.2?}   {:>5.2}x native   (target <= 1.5x)",
        rust.reused_call,
        ratio(rust.reused_call)
    );

    println!();
    println!("MyApp guest by language (the JS and Python ones built by their build.sh)");
    println!(
        "  {:<11} {:>10} {:>10} {:>12} {:>11} {:>11}",
        "language", "size", "compile", "cached load", "fresh call", "reused call"
    );
    let others = [
        ("JavaScript", guests::myapp_js()),
        ("Python", guests::myapp_python()),
    ];
    let rows = std::iter::once(("Rust", rust)).chain(
        others
            .iter()
            .map(|(lang, path)| (*lang, measure(path, &request))),
    );
    for (lang, f) in rows {
        println!(
            "  {lang:<11} {:>6.1} MiB {:>10.2?} {:>12.2?} {:>11.2?} {:>11.2?}",
            f.size as f64 / (1 << 20) as f64,
            f.compile,
            f.cached_load,
            f.fresh_call,
            f.reused_call
        );
    }
}
