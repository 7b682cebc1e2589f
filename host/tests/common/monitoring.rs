//! The monitoring component's tools and files: promtool and dashcheck (built from Go modules by
//! `tests/monitoring/build.sh`), the alert rules as a rules file, and scrapes of a host turned into the
//! input series of a promtool unit test.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::{Value, json};

use super::guests::repo_root;
use super::host::HostProcess;
use super::http;
use super::myapp::wait_for;

/// Directory of promtool, dashcheck and `crds/`: `RECONCILE_HOST_MONITORING_BIN` (as `make test` sets
/// it), or else what the build script prints.
pub fn tools() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        super::guests::go_tools("RECONCILE_HOST_MONITORING_BIN", "tests/monitoring/build.sh")
    })
}

/// Runs a monitoring tool; its output, or a panic with it if it failed.
pub fn run_tool(tool: &str, args: &[&Path]) -> String {
    let out = Command::new(tools().join(tool))
        .args(args)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{tool} {args:?} failed:\n{text}");
    text
}

/// A file of deploy/monitoring/, as YAML documents.
pub fn component_file(name: &str) -> Vec<Value> {
    reconcile_host::render::read_documents(&repo_root().join("deploy/monitoring").join(name))
        .unwrap()
}

/// The PrometheusRule's groups as a Prometheus rules file in `dir` (JSON is YAML), beside a copy of
/// the committed promtool tests that name it.
pub fn write_rules(dir: &Path) -> PathBuf {
    let rule = &component_file("prometheusrule.yaml")[0];
    let rules = dir.join("rules.yaml");
    std::fs::write(
        &rules,
        json!({"groups": rule["spec"]["groups"]}).to_string(),
    )
    .unwrap();
    std::fs::copy(
        repo_root().join("deploy/monitoring/alerts.test.yaml"),
        dir.join("alerts.test.yaml"),
    )
    .unwrap();
    rules
}

/// Every alerting rule: name → its annotations (templates) and labels.
pub fn alert_rules() -> BTreeMap<String, Value> {
    let rule = &component_file("prometheusrule.yaml")[0];
    rule["spec"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["rules"].as_array().unwrap().iter())
        .filter_map(|r| Some((r["alert"].as_str()?.to_string(), r.clone())))
        .collect()
}

/// The `job` label Prometheus gives the host's targets: the Service's label that the ServiceMonitor
/// names as its `jobLabel`.
pub fn job() -> String {
    let monitor = &component_file("servicemonitor.yaml")[0];
    let label = monitor["spec"]["jobLabel"].as_str().unwrap();
    let service = &component_file("service.yaml")[0];
    service["metadata"]["labels"][label]
        .as_str()
        .unwrap()
        .to_string()
}

/// The first scrape of `host` for which `ready` holds (panics after the common timeout, with `what`).
pub async fn scrape_when(
    host: &HostProcess,
    what: &str,
    ready: impl Fn(&Scrape) -> bool,
) -> Scrape {
    wait_for(what, || {
        let scrape = host.metrics_addr().map(|addr| Scrape::of(&addr));
        let scrape = scrape.filter(&ready);
        async move { scrape }
    })
    .await
}

/// The leader Lease taken (`--leader-election`'s, or the ring leader's with `--sharded`), counted
/// from the host's start: present once it has led.
pub const LEASE_ACQUIRED: &str = r#"reconcile_host_lease_transitions_total{transition="acquired"}"#;

/// Whether `host` has taken its leader Lease since it started. From its metrics, not its log: the log
/// says "acquired the Lease" of a shard Lease too, in text or JSON.
pub fn has_led(host: &HostProcess) -> bool {
    (host.metrics_addr()).is_some_and(|addr| Scrape::of(&addr).value(LEASE_ACQUIRED) >= Some(1.0))
}

/// One scrape of a host: each sample line with its family's type, or nothing if the host did not
/// answer (Prometheus then records `up 0`).
#[derive(Clone, Debug, Default)]
pub struct Scrape {
    samples: Vec<Sample>,
    pub up: bool,
}

#[derive(Clone, Debug)]
struct Sample {
    series: String,
    value: f64,
    counter: bool,
}

impl Scrape {
    /// Scrapes `addr`'s /metrics as Prometheus would.
    pub fn of(addr: &str) -> Scrape {
        match http::get(addr, "/metrics") {
            Ok((200, text)) => Scrape::parse(&text),
            _ => Scrape::default(),
        }
    }

    fn parse(text: &str) -> Scrape {
        let mut types = BTreeMap::new();
        let mut samples = Vec::new();
        for line in text.lines() {
            if let Some(declared) = line.strip_prefix("# TYPE ") {
                let (family, kind) = declared.split_once(' ').unwrap();
                types.insert(family.to_string(), kind.to_string());
                continue;
            }
            if line.starts_with('#') || line.is_empty() {
                continue;
            }
            let (series, value) = line.rsplit_once(' ').unwrap();
            let name = series.split('{').next().unwrap();
            // A counter's and a histogram's samples only grow; the family is the name less its suffix.
            let counter = ["", "_total", "_bucket", "_sum", "_count"]
                .iter()
                .any(|suffix| {
                    name.strip_suffix(suffix)
                        .and_then(|family| types.get(family))
                        .is_some_and(|kind| kind == "counter" || kind == "histogram")
                });
            samples.push(Sample {
                series: series.to_string(),
                value: value.parse().unwrap(),
                counter,
            });
        }
        Scrape { samples, up: true }
    }

    /// The value of the first sample whose series contains `needle`.
    pub fn value(&self, needle: &str) -> Option<f64> {
        self.samples
            .iter()
            .find(|s| s.series.contains(needle))
            .map(|s| s.value)
    }
}

/// A promtool test group: the host in one state, held for an hour. `before` and `after` are two
/// scrapes of it; each counter grows every minute by what it grew between them, each gauge keeps its
/// `after` value. The target labels are Prometheus's: `job`, `namespace`, `pod`.
pub fn held_for_an_hour(name: &str, namespace: &str, before: &Scrape, after: &Scrape) -> String {
    let targets = format!(r#"job="{}", namespace="{namespace}", pod="host-0""#, job());
    let mut series = String::new();
    let mut add = |selector: String, values: String| {
        writeln!(
            series,
            "      - series: '{selector}'\n        values: '{values}'"
        )
        .unwrap();
    };
    add(
        format!("up{{{targets}}}"),
        format!("{}x60", u8::from(after.up)),
    );
    for sample in &after.samples {
        let selector = match sample.series.split_once('{') {
            Some((name, labels)) => format!("{name}{{{targets}, {labels}"),
            None => format!("{}{{{targets}}}", sample.series),
        };
        // A counter absent from `before` was 0 then.
        let first = before.samples.iter().find(|s| s.series == sample.series);
        let values = match first.map_or(0.0, |s| s.value) {
            start if sample.counter => format!("{start}+{}x60", sample.value - start),
            _ => format!("{}x60", sample.value),
        };
        add(selector, values);
    }
    format!("  - name: {name}\n    interval: 1m\n    input_series:\n{series}")
}

/// The alert tests of a group: at minute 60, exactly `firing` (alert name and its labels beyond the
/// rule's own) fire, with their annotations rendered, and no other alert of the rules does.
pub fn expect_alerts(firing: &[(&str, BTreeMap<&str, String>)]) -> String {
    let rules = alert_rules();
    let mut tests = String::from("    alert_rule_test:\n");
    for (alert, rule) in &rules {
        write!(
            tests,
            "      - eval_time: 60m\n        alertname: {alert}\n"
        )
        .unwrap();
        let expected: Vec<_> = firing.iter().filter(|(name, _)| name == alert).collect();
        if expected.is_empty() {
            tests.push_str("        exp_alerts: []\n");
            continue;
        }
        tests.push_str("        exp_alerts:\n");
        for (_, labels) in expected {
            let mut all: BTreeMap<&str, String> = labels.clone();
            for (key, value) in rule["labels"].as_object().unwrap() {
                all.insert(key, value.as_str().unwrap().to_string());
            }
            let annotations: BTreeMap<&str, String> = rule["annotations"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(key, template)| (key.as_str(), render(template.as_str().unwrap(), &all)))
                .collect();
            write!(
                tests,
                "          - exp_labels: {}\n            exp_annotations: {}\n",
                json!(all),
                json!(annotations)
            )
            .unwrap();
        }
    }
    tests
}

/// The rules' templates use only `{{ $labels.NAME }}`.
fn render(template: &str, labels: &BTreeMap<&str, String>) -> String {
    labels
        .iter()
        .fold(template.to_string(), |text, (key, value)| {
            text.replace(&format!("{{{{ $labels.{key} }}}}"), value)
        })
}

/// Runs `promtool test rules` on `groups` against the rules in `dir`.
pub fn promtool_test(dir: &Path, groups: &[String]) -> String {
    let file = dir.join("host-states.test.yaml");
    let text = format!(
        "rule_files:\n  - rules.yaml\nevaluation_interval: 1m\ntests:\n{}",
        groups.concat()
    );
    std::fs::write(&file, &text).unwrap();
    let out = Command::new(tools().join("promtool"))
        .args(["test", "rules"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "promtool test rules failed:\n{}{}\n--- the test file ---\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
