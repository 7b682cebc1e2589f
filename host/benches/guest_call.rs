//! `make bench` (guest part): the MyApp guest called with a fresh instance and with a reused instance,
//! against the same logic compiled natively, side by side in one run, printed as ratios, as it is built
//! (without WASI) and as built for `wasm32-wasip2`; then the same
//! MyApp logic as a Rust, a Go, a JavaScript and a Python component: size, compile time, cached load
//! time, per-call cost in both modes, and the linear memory an instance holds once it has answered.
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

/// Runs the contenders in turn, one batch each per round, so that the machine's drift (shared cores,
/// clock changes) hits them alike; returns each one's median time per call and its median ratio to
/// the first contender's time in the same round.
fn race<const N: usize>(mut contenders: [&mut dyn FnMut(); N]) -> [(Duration, f64); N] {
    let calls = contenders.each_mut().map(|f| {
        let start = Instant::now();
        f();
        let estimate = start.elapsed().max(Duration::from_nanos(1));
        let calls = (BATCH_TIME.as_nanos() / estimate.as_nanos()).clamp(5, 200) as u32;
        for _ in 0..calls {
            f();
        }
        calls
    });
    let rounds: Vec<[Duration; N]> = (0..BATCHES)
        .map(|_| {
            std::array::from_fn(|i| {
                let start = Instant::now();
                for _ in 0..calls[i] {
                    contenders[i]();
                }
                start.elapsed() / calls[i]
            })
        })
        .collect();
    std::array::from_fn(|i| {
        let mut times: Vec<Duration> = rounds.iter().map(|round| round[i]).collect();
        let mut ratios: Vec<f64> = rounds
            .iter()
            .map(|round| round[i].as_secs_f64() / round[0].as_secs_f64())
            .collect();
        times.sort();
        ratios.sort_by(f64::total_cmp);
        (times[BATCHES / 2], ratios[BATCHES / 2])
    })
}

fn median_per_call(mut f: impl FnMut()) -> Duration {
    race([&mut f])[0].0
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
    /// Linear memory of the reused instance after its calls (what it reserves from the guests' memory
    /// budget): the initial memory and what the guest's allocator grew it by.
    memory: usize,
    /// The same module loaded for fresh calls and for reused instances.
    modules: (Arc<Module>, Arc<Module>),
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
    let fresh_call = median_per_call(|| call(&fresh_module));
    let reused_call = median_per_call(|| call(&reused_module));
    Figures {
        size: bytes.len(),
        compile,
        cached_load,
        fresh_call,
        reused_call,
        memory: reuse_rt.memory_budget().used(),
        modules: (fresh_module, reused_module),
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
        related: Vec::new(),
        finalizing: false,
    };

    let rust = measure(&guests::component("guest_myapp"), &request);
    let wasip2 = measure(&guests::wasip2("guest_myapp"), &request);
    let (fresh_module, reused_module) = rust.modules.clone();
    let (wasip2_fresh, wasip2_reused) = wasip2.modules.clone();
    // The same guest in a runtime that resets every page of an ended instance's memory, as wasmtime
    // does unless told to scan for the pages written (`PAGEMAP_SCAN`): what that scan saves.
    let every_page =
        Runtime::new(RuntimeConfig::default().reset_written_pages_only(false)).unwrap();
    let (every_page_fresh, _) = load(
        &every_page,
        &std::fs::read(guests::component("guest_myapp")).unwrap(),
    );
    // A finalizing call does no work in the guest: what is left is the host-guest crossing (copying
    // the request in and the answer out, the store's bookkeeping).
    let empty = Request {
        related: Vec::new(),
        finalizing: true,
        ..request.clone()
    };
    let call = |module: &Module, request: &Request| {
        black_box(module.call_raw("bench", black_box(request)).unwrap());
    };
    let [
        native,
        fresh,
        reused,
        crossing,
        lifecycle,
        old_fresh,
        old_reused,
        every_page_reset,
    ] = race([
        &mut || {
            black_box(
                guest_myapp::reconcile(black_box(&parent), black_box(&observed), false).unwrap(),
            );
        },
        &mut || call(&fresh_module, &request),
        &mut || call(&reused_module, &request),
        &mut || call(&reused_module, &empty),
        &mut || call(&fresh_module, &empty),
        &mut || call(&wasip2_fresh, &request),
        &mut || call(&wasip2_reused, &request),
        &mut || call(&every_page_fresh, &request),
    ]);
    // A fresh call is a reused call plus the instance's creation and teardown. That part alone, a fresh
    // call doing no work less the crossing, is wasmtime's pooling allocator, whatever the guest does.
    let instance = lifecycle.0.saturating_sub(crossing.0);
    let vs_native = |d: Duration| d.as_secs_f64() / native.0.as_secs_f64();
    println!(
        "MyApp guest call (medians over {BATCHES} rounds, the contenders taking turns; component {} bytes \
         without WASI, {} bytes for wasm32-wasip2)",
        rust.size, wasip2.size
    );
    println!("  native Rust (same logic)  {:>9.2?}", native.0);
    println!(
        "  wasm, fresh instance      {:>9.2?}   {:>5.2}x native   (target <= 5x)",
        fresh.0, fresh.1
    );
    println!(
        "    of which the instance   {:>9.2?}   {:>5.2}x native   (creating and tearing it down: a fresh \
         call that does no work, less the crossing)",
        instance,
        vs_native(instance)
    );
    println!(
        "    resetting every page    {:>9.2?}   {:>5.2}x native   (the same, without PAGEMAP_SCAN: \
         every byte of the ended instance's memory reset, not only the pages it wrote)",
        every_page_reset.0, every_page_reset.1
    );
    println!(
        "  wasm, reused instance     {:>9.2?}   {:>5.2}x native   (target <= 1.5x)",
        reused.0, reused.1
    );
    println!(
        "    of which the crossing   {:>9.2?}   {:>5.2}x native   (a call that does no work)",
        crossing.0,
        vs_native(crossing.0)
    );
    println!(
        "  the same guest built for wasm32-wasip2 (13 WASI interfaces imported, wasi-libc's allocator):"
    );
    println!(
        "  wasip2, fresh instance    {:>9.2?}   {:>5.2}x native",
        old_fresh.0, old_fresh.1
    );
    println!(
        "  wasip2, reused instance   {:>9.2?}   {:>5.2}x native",
        old_reused.0, old_reused.1
    );

    println!();
    println!("MyApp guest by language (the Go, JS and Python ones built by their build.sh)");
    println!(
        "  {:<13} {:>10} {:>10} {:>12} {:>11} {:>11} {:>10}",
        "language", "size", "compile", "cached load", "fresh call", "reused call", "memory"
    );
    let others = [
        ("Go", guests::myapp_go()),
        ("JavaScript", guests::myapp_js()),
        ("Python", guests::myapp_python()),
    ];
    let rows = [("Rust", rust), ("Rust wasip2", wasip2)].into_iter().chain(
        others
            .iter()
            .map(|(lang, path)| (*lang, measure(path, &request))),
    );
    for (lang, f) in rows {
        println!(
            "  {lang:<13} {:>6.1} MiB {:>10.2?} {:>12.2?} {:>11.2?} {:>11.2?} {:>6.1} MiB",
            f.size as f64 / (1 << 20) as f64,
            f.compile,
            f.cached_load,
            f.fresh_call,
            f.reused_call,
            f.memory as f64 / (1 << 20) as f64
        );
    }
}
