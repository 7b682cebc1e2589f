//! The sharding benchmark's figures: each replica's resident memory by what backs it, the writes
//! per parent, and the printed report of the rows.

use std::fmt::Write as _;

use super::api::{Requests, WRITE_VERBS};
use super::{CONCURRENCY, LABEL_VERBS, Row, SLOWER, SLOWEST};
use super::{awake, cpu};

pub fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Resident memory of a process by what backs it, in MiB (`/proc/<pid>/smaps`): what each replica
/// has whatever it holds (files: the binary and its libraries, resident as far as run) apart from
/// the rest (anonymous: the malloc heap with the caches, thread stacks, the guests' linear memories).
/// The anonymous part is not split further: wasmtime's pool and glibc's arenas are both anonymous
/// mappings, and adjacent ones cannot be told apart from outside.
#[derive(Clone, Copy, Default)]
pub struct Resident {
    anonymous: f64,
    files: f64,
}

impl Resident {
    pub fn of(pid: u32) -> Resident {
        let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap_or_default();
        let mut resident = Resident::default();
        let mut file = false;
        for line in smaps.lines() {
            let mut fields = line.split_whitespace();
            let first = fields.next().unwrap_or_default();
            if first.split_once('-').is_some_and(|(start, end)| {
                u64::from_str_radix(start, 16).is_ok() && u64::from_str_radix(end, 16).is_ok()
            }) {
                // `start-end perms offset dev inode [path]`
                file = fields.nth(4).is_some_and(|path| path.starts_with('/'));
            } else if first == "Rss:" {
                let kib = fields.next().and_then(|n| n.parse().ok()).unwrap_or(0);
                match file {
                    true => resident.files += mib(kib),
                    false => resident.anonymous += mib(kib),
                }
            }
        }
        resident
    }
}

/// The writes per parent the replicas caused: Deployments and MyApp statuses (as the convergence
/// benchmark counts them), the assignment label on the MyApps, and the Leases (the shard Leases'
/// and the leader's renewals: a cost in time, not per parent, shown per parent all the same).
struct Writes {
    children_and_status: f64,
    label: f64,
    leases: f64,
}

impl Writes {
    fn of(requests: &Requests) -> Writes {
        Writes {
            children_and_status: requests.controller(),
            label: requests.writes_on("myapps", &LABEL_VERBS),
            leases: requests.writes_on("leases", &WRITE_VERBS),
        }
    }

    fn total(&self) -> f64 {
        self.children_and_status + self.label + self.leases
    }
}

pub fn report(n: usize, rows: &[Row]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", awake::described());
    let _ = writeln!(
        out,
        "Sharding: {n} MyApps created at once ({CONCURRENCY} at a time) until each has its Deployment and status; each row on a fresh control plane, shared by its replicas"
    );
    let _ = writeln!(
        out,
        "  {:<13} {:>10} {:>9}   {:<46} {:<32} peak / single (goal <= 45 %)",
        "replicas",
        "converge",
        "created",
        "writes/parent = deploy+status + label + lease",
        "peak RSS per replica MiB (each)",
    );
    let single = rows[0].replicas[0].peak_mib;
    for row in rows {
        let writes = Writes::of(&row.requests);
        let kind = if row.sharded { "sharded" } else { "unsharded" };
        let peaks: Vec<String> = (row.replicas.iter())
            .map(|r| format!("{:.1}", r.peak_mib))
            .collect();
        let ratios: Vec<String> = (row.replicas.iter())
            .map(|r| format!("{:.0} %", r.peak_mib * 100.0 / single))
            .collect();
        let ratio = if row.sharded {
            let worst = (row.replicas.iter()).fold(0.0_f64, |m, r| m.max(r.peak_mib / single));
            let verdict = match (row.converged, worst <= 0.45) {
                // A peak of a partial convergence proves nothing either way.
                (false, _) => "goal not judged: not converged",
                (true, true) => "goal met",
                (true, false) => "goal NOT met",
            };
            format!("{} ({verdict})", ratios.join(", "))
        } else {
            "-".to_string()
        };
        let mark = if row.converged { ' ' } else { '!' };
        let _ = writeln!(
            out,
            "  {:<13} {:>8.2} s{mark}{:>7.2} s   {:<46} {:<32} {ratio}",
            format!("{} {kind}", row.replicas.len()),
            row.time.as_secs_f64(),
            row.created.as_secs_f64(),
            format!(
                "{:.2} = {:.2} + {:.2} + {:.3}",
                writes.total(),
                writes.children_and_status,
                writes.label,
                writes.leases
            ),
            peaks.join(", "),
        );
    }
    let _ = writeln!(
        out,
        "  (writes from the API server's own count, every client's: Deployments and MyApp statuses, the assignment label (MyApp PATCH/PUT/APPLY), and every Lease write over the convergence; Events and the cluster's own controllers' writes are in the breakdown below)"
    );
    for row in rows {
        replicas(&mut out, n, row);
    }
    let _ = writeln!(
        out,
        "CPU while converging (the {} cores are shared by every process; \"controller\" is the replicas together):",
        cpu::cores()
    );
    for row in rows {
        let _ = writeln!(
            out,
            "  {} replica(s): {}",
            row.replicas.len(),
            row.cpu.described(row.time)
        );
    }
    let _ = writeln!(
        out,
        "API requests per parent while converging, by resource and verb (every client: the replicas, the benchmark's creations and the cluster's own controllers):"
    );
    for row in rows {
        let _ = writeln!(out, "  {} replica(s)", row.replicas.len());
        out.push_str(&row.requests.breakdown("    "));
    }
    out
}

/// Each replica of `row`: what it holds, by the parents' labels and by its own account, what it
/// did, and its memory.
fn replicas(out: &mut String, n: usize, row: &Row) {
    let kind = if row.sharded { "sharded" } else { "unsharded" };
    let (parents, children) = (&row.parents, &row.children);
    let reconciles: f64 = row.replicas.iter().filter_map(|r| r.reconciles).sum();
    let _ = writeln!(
        out,
        "{} replica(s), {kind}: {:.2} reconciles per parent in all; parents unlabelled at the end {}, draining {}; Deployments unlabelled {}",
        row.replicas.len(),
        reconciles / n as f64,
        parents.unassigned,
        parents.draining,
        children.unassigned,
    );
    if !row.converged {
        let _ = writeln!(
            out,
            "  NOT converged (! above): gave up after {:.0} s ({SLOWER}x the single replica's time, at least {} s); parents without a status, by the member their label names: {:?}",
            row.time.as_secs_f64(),
            SLOWEST.as_secs(),
            row.pending,
        );
    }
    let (strangers, child_strangers) = (
        parents.strangers(&row.replicas),
        children.strangers(&row.replicas),
    );
    if !strangers.is_empty() || !child_strangers.is_empty() {
        let _ = writeln!(
            out,
            "  labels naming no replica: parents {strangers:?}, Deployments {child_strangers:?}"
        );
    }
    let opt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0}"));
    let pairs = |v: &[(String, f64)]| {
        let each: Vec<String> = v.iter().map(|(k, n)| format!("{k} {n:.0}")).collect();
        if each.is_empty() {
            "-".to_string()
        } else {
            each.join(", ")
        }
    };
    for r in &row.replicas {
        let _ = writeln!(
            out,
            "  {}: RSS started {:.1} / now {:.1} / peak {:.1} MiB (now: anonymous {:.1}, files {:.1}); parents labelled for it {} (Deployments {}), held by its metric {}; objects cached {}; reconciles {}; ring seen {}, leader {}; label writes {}; releases {}; its Lease {}; fenced writes {}",
            r.member,
            r.started_mib,
            r.now_mib,
            r.peak_mib,
            r.resident.anonymous,
            r.resident.files,
            parents.held_by(&r.member),
            children.held_by(&r.member),
            opt(r.held),
            opt(r.cached),
            opt(r.reconciles),
            opt(r.ring),
            opt(r.leader),
            pairs(&r.assignments),
            opt(r.releases),
            pairs(&r.transitions),
            opt(r.fenced),
        );
    }
}
