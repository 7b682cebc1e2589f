//! The convergence benchmark's report: what `make bench` prints and writes to
//! `target/bench/controllers.txt`.

use std::fmt::Write as _;
use std::time::Duration;

use crate::CONCURRENCY;
use crate::cpu;
use crate::growth::{Row, Swaps};
use crate::measure::Converged;

/// Everything the convergence benchmark measured.
pub struct Results {
    pub python: Converged,
    /// The main row (with the swaps) first, then the growth rows.
    pub rows: Vec<Row>,
    /// Cold starts: language, whether the artifact cache was filled, time.
    pub cold: Vec<(&'static str, bool, Duration)>,
}

fn secs(c: &Converged) -> f64 {
    c.time.as_secs_f64()
}

pub fn report(r: &Results) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", crate::awake::described());
    let main = &r.rows[0];
    convergence(&mut out, main, &r.python);
    if let Some(swaps) = &main.swaps {
        hot_swap(&mut out, main.parents, swaps);
    }
    let _ = writeln!(
        out,
        "Cold start: process start until a first parent has its status"
    );
    for (language, cached, time) in &r.cold {
        let cache = if *cached {
            "filled artifact cache"
        } else {
            "empty artifact cache"
        };
        let _ = writeln!(
            out,
            "  {language:<11} {cache:<22} {:>8.2} s",
            time.as_secs_f64()
        );
    }
    growth(&mut out, &r.rows);
    out
}

fn hot_swap(out: &mut String, parents: usize, swaps: &Swaps) {
    let (swap, floor) = (&swaps.ours, &swaps.floor);
    let _ = writeln!(
        out,
        "Hot swap at {} parents: ConfigMap update until every Deployment is the new module's: {:.2} s   ({:.2} writes and {} reconciles per parent; CPU {})",
        parents,
        swap.time.as_secs_f64(),
        swap.writes,
        swap.host
            .map_or("-".to_string(), |h| format!("{:.2}", h.reconciles)),
        swap.cpu.described(swap.time),
    );
    if let Some(loaded) = swap.module_loaded {
        let _ = writeln!(
            out,
            "  of which until the new module was compiled and swapped in: {:.2} s; the rest, {:.2} s, is {:.2}x the floor",
            loaded.as_secs_f64(),
            (swap.time - loaded).as_secs_f64(),
            (swap.time - loaded).as_secs_f64() / floor.time.as_secs_f64()
        );
    }
    let floors = [
        ("the same writes from a bare client (floor)", floor),
        (
            "the floor + the Updated Event (checked)",
            &swaps.checked_floor,
        ),
    ];
    for (name, floor) in floors {
        let _ = writeln!(
            out,
            "  {name}: {:.2} s   ({:.2} writes per parent; CPU {}); swap / this {:.2}x   (target <= 1.3x)",
            floor.time.as_secs_f64(),
            floor.writes,
            floor.cpu.described(floor.time),
            swap.time.as_secs_f64() / floor.time.as_secs_f64()
        );
    }
}

fn convergence(out: &mut String, r: &Row, python: &Converged) {
    let _ = writeln!(
        out,
        "Convergence: {} MyApps created at once ({CONCURRENCY} at a time) until each has its Deployment and status, each contender on a fresh control plane",
        r.parents
    );
    let _ = writeln!(
        out,
        "  {:<30} {:>9} {:>9} {:>28} {:>9} {:>11}",
        "contender", "time", "created", "RSS started / now / peak", "writes", "reconciles"
    );
    let contenders = [
        ("bare client writes (floor)", &r.floor),
        ("floor + GET + Event (checked)", &r.checked_floor),
        ("reconcile-host, Rust guest", &r.ours),
        ("native kube-rs, same logic", &r.native),
        ("seed's Python controller", python),
    ];
    for (name, c) in contenders {
        let rss = c.rss_mib.map_or("-".to_string(), |r| {
            format!("{:.1} / {:.1} / {:.1} MiB", r.started, r.now, r.peak)
        });
        let reconciles = c
            .host
            .map_or("-".to_string(), |h| format!("{:.2}", h.reconciles));
        let _ = writeln!(
            out,
            "  {name:<30} {:>7.2} s {:>7.2} s {rss:>28} {:>9.2} {reconciles:>11}",
            secs(c),
            c.created.as_secs_f64(),
            c.requests.controller(),
        );
    }
    let _ = writeln!(
        out,
        "  (created: when the last parent was created, for the floor when its last write was done; writes: Deployment and MyApp status writes per parent; reconciles per parent, from the host's metrics)"
    );
    let (host, host_verbs) = r.ours.requests.on("deployments");
    let (before, before_verbs) = r.checked_floor.requests.on("deployments");
    let _ = writeln!(
        out,
        "  requests on Deployments per parent (every client): reconcile-host {host:.2} ({host_verbs}): a create-only POST and the managedFields PATCH per new child; before create-only children (issue 34) a GET and an apply, as the checked floor sends them: {before:.2} ({before_verbs})"
    );
    let (ours, floor, native) = (&r.ours, &r.floor, &r.native);
    if let Some(h) = ours.host {
        let _ = writeln!(
            out,
            "  reconcile-host's own account: {:.2} reconciles per parent, {:.2} ms each on average, of which the guest call {:.1} µs; its {CONCURRENCY} workers were busy {:.0}% of the time",
            h.reconciles,
            h.reconcile_seconds * 1000.0 / h.reconciles,
            h.guest_seconds * 1e6 / h.reconciles,
            h.reconcile_seconds * r.parents as f64 * 100.0 / (CONCURRENCY as f64 * secs(ours)),
        );
    }
    let ratios = [
        ("ours / floor", secs(ours) / secs(floor), "target <= 1.5x"),
        (
            "ours / checked floor",
            secs(ours) / secs(&r.checked_floor),
            "what the controller costs beyond the requests its rules need",
        ),
        ("python / ours", secs(python) / secs(ours), "target >= 10x"),
        (
            "native / ours",
            secs(native) / secs(ours),
            "target >= 1x: ours no slower",
        ),
    ];
    for (name, ratio, target) in ratios {
        let _ = writeln!(out, "  {name:<20} {ratio:>6.2}x   ({target})");
    }
    if let (Some(o), Some(n)) = (ours.rss_mib, native.rss_mib) {
        let _ = writeln!(
            out,
            "  peak RSS ours / native {:>4.2}x   (target <= 1.5x; started {:.2}x, now {:.2}x; ours grew {:.1} MiB with the parents, native {:.1} MiB)",
            o.peak / n.peak,
            o.started / n.started,
            o.now / n.now,
            o.now - o.started,
            n.now - n.started
        );
    }
    let _ = writeln!(
        out,
        "CPU while converging (the {cores} cores are shared by every process; the floors' writer is the benchmark):",
        cores = cpu::cores()
    );
    for (name, c) in contenders {
        let _ = writeln!(out, "  {name:<30} {}", c.cpu.described(c.time));
    }
    let _ = writeln!(
        out,
        "API writes per parent while converging, by resource and verb (every client: the contender and the cluster's own controllers):"
    );
    for (name, c) in contenders {
        let _ = writeln!(out, "  {name}");
        out.push_str(&c.requests.breakdown("    "));
    }
}

fn growth(out: &mut String, rows: &[Row]) {
    if rows.len() < 2 {
        return;
    }
    let _ = writeln!(
        out,
        "Growth: each contender at each size on a fresh control plane (time, and time per parent)"
    );
    let _ = writeln!(
        out,
        "  {:>7} {:>18} {:>18} {:>18} {:>18} {:>7} {:>7} {:>10} {:>10} {:>7} {:>10}",
        "parents",
        "floor",
        "checked floor",
        "ours",
        "native",
        "/floor",
        "/chkd",
        "ours RSS",
        "native RSS",
        "writes",
        "reconciles"
    );
    let per = |c: &Converged, n: usize| {
        format!("{:.2} s {:>5.2} ms", secs(c), secs(c) * 1000.0 / n as f64)
    };
    let peak = |c: &Converged| c.rss_mib.map_or(0.0, |r| r.peak);
    for row in rows {
        let n = row.parents;
        let _ = writeln!(
            out,
            "  {n:>7} {:>18} {:>18} {:>18} {:>18} {:>6.2}x {:>6.2}x {:>6.1} MiB {:>6.1} MiB {:>7.2} {:>10}",
            per(&row.floor, n),
            per(&row.checked_floor, n),
            per(&row.ours, n),
            per(&row.native, n),
            secs(&row.ours) / secs(&row.floor),
            secs(&row.ours) / secs(&row.checked_floor),
            peak(&row.ours),
            peak(&row.native),
            row.ours.requests.controller(),
            row.ours
                .host
                .map_or("-".to_string(), |h| format!("{:.2}", h.reconciles)),
        );
    }
    let _ = writeln!(
        out,
        "  (/floor, /chkd: ours against each floor; RSS: peak; writes and reconciles: reconcile-host's Deployment and status writes, and its reconciles, per parent)"
    );
    for row in &rows[1..] {
        let _ = writeln!(out, "  CPU at {} parents:", row.parents);
        for (name, c) in [
            ("floor", &row.floor),
            ("checked floor", &row.checked_floor),
            ("ours", &row.ours),
            ("native", &row.native),
        ] {
            let _ = writeln!(out, "    {name:<14} {}", c.cpu.described(c.time));
        }
    }
    for pair in rows.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let added = (b.parents - a.parents) as f64;
        let ms = |x: &Converged, y: &Converged| (secs(y) - secs(x)) * 1000.0 / added;
        let kib = |x: &Converged, y: &Converged| (peak(y) - peak(x)) * 1024.0 / added;
        let _ = writeln!(
            out,
            "  each parent added from {} to {}: floor {:.2} ms, checked floor {:.2} ms, ours {:.2} ms, native {:.2} ms; peak RSS ours {:.1} KiB, native {:.1} KiB",
            a.parents,
            b.parents,
            ms(&a.floor, &b.floor),
            ms(&a.checked_floor, &b.checked_floor),
            ms(&a.ours, &b.ours),
            ms(&a.native, &b.native),
            kib(&a.ours, &b.ours),
            kib(&a.native, &b.native),
        );
    }
}
