//! CPU time while a contender converges: its own process's, the control plane's (the API server, etcd,
//! the cluster's controllers, kwok) and the benchmark's (the floors' writer, and the watch that times
//! every contender). All of them share the machine's cores, so what a controller spends is taken from
//! the API server: this account tells whether the time a controller takes beyond the floor goes to
//! requests or to the controller's own work.

use std::ops::Sub;
use std::time::Duration;

use testcluster::TestCluster;
use testcluster::process::{Component, cpu_seconds_of};

/// CPU seconds, by process.
#[derive(Clone, Debug, Default)]
pub struct CpuSeconds {
    pub contender: f64,
    /// Each control plane component's, by name, in start order.
    pub control_plane: Vec<(&'static str, f64)>,
    pub bench: f64,
}

impl CpuSeconds {
    pub fn control_plane(&self) -> f64 {
        self.control_plane.iter().map(|(_, s)| s).sum()
    }

    pub fn total(&self) -> f64 {
        self.contender + self.control_plane() + self.bench
    }

    /// CPU seconds by process, and how busy they kept the machine's cores over `time`.
    pub fn described(&self, time: Duration) -> String {
        let components: Vec<String> = self
            .control_plane
            .iter()
            .map(|(name, s)| format!("{name} {s:.2}"))
            .collect();
        format!(
            "controller {:.2} s, control plane {:.2} s ({}), benchmark {:.2} s: {:.0}% of the cores",
            self.contender,
            self.control_plane(),
            components.join(", "),
            self.bench,
            self.total() * 100.0 / (cores() as f64 * time.as_secs_f64())
        )
    }
}

impl Sub for CpuSeconds {
    type Output = CpuSeconds;

    fn sub(self, before: CpuSeconds) -> CpuSeconds {
        let was = |name: &str| {
            before
                .control_plane
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(0.0, |(_, s)| *s)
        };
        CpuSeconds {
            contender: self.contender - before.contender,
            control_plane: self
                .control_plane
                .iter()
                .map(|&(name, s)| (name, s - was(name)))
                .collect(),
            bench: self.bench - before.bench,
        }
    }
}

/// The machine's cores, which every process measured shares.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Reads the CPU time of a contender (none for a floor, which the benchmark itself writes), the
/// control plane and the benchmark.
pub struct CpuClock<'a> {
    pub cluster: &'a TestCluster,
    pub contender: Option<&'a Component>,
}

impl CpuClock<'_> {
    pub fn read(&self) -> CpuSeconds {
        CpuSeconds {
            contender: self.contender.map_or(0.0, Component::cpu_seconds),
            control_plane: self.cluster.cpu_seconds(),
            bench: cpu_seconds_of(std::process::id()),
        }
    }
}
