//! Child update strategies: how a changed desired state reaches a child that already exists, chosen per
//! child kind, with Metacontroller's five methods and status checks. This is the configuration and its
//! text form (`--update-strategy`, a Reconciler's `children[].updateStrategy`); the rule that applies
//! it is part of the decision (`controller::decide::update`).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::kind::Gvk;
use crate::text::parse_period;

/// How a changed desired state reaches an existing child.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub enum Method {
    /// Never: an existing child keeps its state until someone deletes it; then it is created anew.
    OnDelete,
    /// Delete the child at once; it is created anew, as desired, once it is gone.
    Recreate,
    /// Update it in place (server-side apply), every child at once.
    #[default]
    InPlace,
    /// `Recreate`, one child at a time: the next only once the last passes its status checks.
    RollingRecreate,
    /// `InPlace`, one child at a time: the next only once the last passes its status checks.
    RollingInPlace,
}

impl Method {
    pub const NAMES: [&str; 5] = [
        "OnDelete",
        "Recreate",
        "InPlace",
        "RollingRecreate",
        "RollingInPlace",
    ];

    /// Whether children are updated one at a time, behind status checks.
    pub fn rolling(self) -> bool {
        matches!(self, Method::RollingRecreate | Method::RollingInPlace)
    }

    /// Whether an outdated child is deleted (and created anew) rather than updated.
    pub fn recreates(self) -> bool {
        matches!(self, Method::Recreate | Method::RollingRecreate)
    }
}

impl FromStr for Method {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, String> {
        serde_json::from_value(Value::String(name.into()))
            .map_err(|_| format!("{name}: not one of {}", Method::NAMES.join(", ")))
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// A condition a child must show to pass a status check: its type and status, and its reason if
/// given (Metacontroller's `statusChecks.conditions`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct ConditionCheck {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    #[serde(default)]
    pub reason: Option<String>,
}

impl ConditionCheck {
    /// Whether `conditions` (a `.status.conditions` list) hold a condition this check accepts.
    pub fn passes(&self, conditions: &[Value]) -> bool {
        conditions.iter().any(|condition| {
            condition["type"] == self.type_.as_str()
                && condition["status"] == self.status.as_str()
                && (self.reason.as_ref())
                    .is_none_or(|reason| condition["reason"] == reason.as_str())
        })
    }
}

impl fmt::Display for ConditionCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.type_, self.status)?;
        match &self.reason {
            Some(reason) => write!(f, "/{reason}"),
            None => Ok(()),
        }
    }
}

impl FromStr for ConditionCheck {
    type Err = String;

    /// `TYPE=STATUS` or `TYPE=STATUS/REASON`, e.g. `Available=True`.
    fn from_str(text: &str) -> Result<Self, String> {
        let malformed = || format!("status check `{text}`: not TYPE=STATUS[/REASON]");
        let (type_, rest) = text.split_once('=').ok_or_else(malformed)?;
        let (status, reason) = match rest.split_once('/') {
            Some((status, reason)) => (status, Some(reason.to_string())),
            None => (rest, None),
        };
        if type_.is_empty() || status.is_empty() || reason.as_deref() == Some("") {
            return Err(malformed());
        }
        Ok(ConditionCheck {
            type_: type_.into(),
            status: status.into(),
            reason,
        })
    }
}

/// The update strategy of one child kind. A Reconciler's `children[].updateStrategy` reads as
/// Metacontroller's: `{method, statusChecks: {conditions: [{type, status, reason}]},
/// progressDeadlineSeconds}`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "StrategySpec")]
pub struct UpdateStrategy {
    pub method: Method,
    /// What a child must show before a rolling update moves on (besides `status.observedGeneration`
    /// catching up with its generation, where the child has one).
    pub checks: Vec<ConditionCheck>,
    /// How long a rolling update waits for a child to pass its checks before it stops and says so on
    /// the parent (a Deployment's `progressDeadlineSeconds`).
    pub progress_deadline: Duration,
}

/// A Deployment's default `progressDeadlineSeconds`.
pub const DEFAULT_PROGRESS_DEADLINE: Duration = Duration::from_secs(600);

impl Default for UpdateStrategy {
    fn default() -> Self {
        UpdateStrategy {
            method: Method::InPlace,
            checks: Vec::new(),
            progress_deadline: DEFAULT_PROGRESS_DEADLINE,
        }
    }
}

impl UpdateStrategy {
    /// Whether `child` passes the status checks: its controller has seen its latest spec
    /// (`status.observedGeneration`, where it reports one) and it shows every checked condition.
    pub fn passes(&self, child: &Value) -> bool {
        let status = &child["status"];
        let generation = child["metadata"]["generation"].as_i64();
        let observed = status["observedGeneration"].as_i64();
        let caught_up = match (generation, observed) {
            (Some(generation), Some(observed)) => observed >= generation,
            _ => true,
        };
        let conditions = status["conditions"]
            .as_array()
            .map_or(&[][..], Vec::as_slice);
        caught_up && self.checks.iter().all(|check| check.passes(conditions))
    }

    /// The checks as people write them, for messages: `Available=True, Ready=True`.
    pub fn checks_text(&self) -> String {
        let checks: Vec<String> = self.checks.iter().map(ToString::to_string).collect();
        match checks.is_empty() {
            true => "observedGeneration".into(),
            false => checks.join(", "),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StrategySpec {
    method: Method,
    #[serde(default)]
    status_checks: StatusChecks,
    #[serde(default)]
    progress_deadline_seconds: Option<u64>,
}

#[derive(Default, Deserialize)]
struct StatusChecks {
    #[serde(default)]
    conditions: Vec<ConditionCheck>,
}

impl TryFrom<StrategySpec> for UpdateStrategy {
    type Error = String;

    fn try_from(spec: StrategySpec) -> Result<Self, String> {
        let checks = spec.status_checks.conditions;
        if !checks.is_empty() && !spec.method.rolling() {
            return Err(format!(
                "statusChecks are for RollingRecreate and RollingInPlace, not {}",
                spec.method
            ));
        }
        let deadline = spec.progress_deadline_seconds.map(Duration::from_secs);
        Ok(UpdateStrategy {
            method: spec.method,
            checks,
            progress_deadline: deadline.unwrap_or(DEFAULT_PROGRESS_DEADLINE),
        })
    }
}

/// One child kind's update strategy, as `--update-strategy` gives it:
/// `KIND=METHOD[,TYPE=STATUS[/REASON]]...[,deadline=DURATION]`, e.g.
/// `apps/v1/Deployment=RollingInPlace,Available=True,deadline=5m`.
#[derive(Clone, Debug, PartialEq)]
pub struct KindStrategy {
    pub kind: Gvk,
    pub strategy: UpdateStrategy,
}

impl FromStr for KindStrategy {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (kind, rest) = text
            .split_once('=')
            .ok_or_else(|| format!("`{text}`: not KIND=METHOD[,TYPE=STATUS]...[,deadline=D]"))?;
        let kind: Gvk = kind.parse().map_err(|e| format!("{e}"))?;
        let mut parts = rest.split(',');
        let method: Method = parts.next().unwrap_or_default().parse()?;
        let mut strategy = UpdateStrategy {
            method,
            ..UpdateStrategy::default()
        };
        for part in parts {
            match part.strip_prefix("deadline=") {
                Some(period) => strategy.progress_deadline = parse_period(period)?,
                None => strategy.checks.push(part.parse()?),
            }
        }
        if !strategy.checks.is_empty() && !method.rolling() {
            return Err(format!(
                "`{text}`: status checks are for RollingRecreate and RollingInPlace, not {method}"
            ));
        }
        Ok(KindStrategy { kind, strategy })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_flag_names_a_kind_a_method_checks_and_a_deadline() {
        let parsed: KindStrategy = "apps/v1/Deployment=RollingInPlace,Available=True,deadline=5m"
            .parse()
            .unwrap();
        assert_eq!(parsed.kind.to_string(), "apps/v1/Deployment");
        assert_eq!(parsed.strategy.method, Method::RollingInPlace);
        assert_eq!(parsed.strategy.checks_text(), "Available=True");
        assert_eq!(parsed.strategy.progress_deadline, Duration::from_secs(300));
        let plain: KindStrategy = "v1/ConfigMap=OnDelete".parse().unwrap();
        assert_eq!(plain.strategy.method, Method::OnDelete);
        assert_eq!(plain.strategy.progress_deadline, DEFAULT_PROGRESS_DEADLINE);
        for bad in [
            "apps/v1/Deployment",
            "apps/v1/Deployment=Sometimes",
            "Deployment=InPlace",
            "apps/v1/Deployment=InPlace,Available=True",
            "apps/v1/Deployment=RollingInPlace,Available",
            "apps/v1/Deployment=RollingInPlace,deadline=soon",
        ] {
            assert!(bad.parse::<KindStrategy>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_reconciler_spec_reads_as_metacontroller_s() {
        let spec = json!({"method": "RollingRecreate",
            "statusChecks": {"conditions": [{"type": "Ready", "status": "True"}]},
            "progressDeadlineSeconds": 30});
        let strategy: UpdateStrategy = serde_json::from_value(spec).unwrap();
        assert_eq!(strategy.method, Method::RollingRecreate);
        assert_eq!(strategy.checks_text(), "Ready=True");
        assert_eq!(strategy.progress_deadline, Duration::from_secs(30));
        let plain: UpdateStrategy = serde_json::from_value(json!({"method": "OnDelete"})).unwrap();
        assert_eq!(
            plain,
            UpdateStrategy {
                method: Method::OnDelete,
                ..UpdateStrategy::default()
            }
        );
        let checked_in_place = json!({"method": "InPlace",
            "statusChecks": {"conditions": [{"type": "Ready", "status": "True"}]}});
        let err = serde_json::from_value::<UpdateStrategy>(checked_in_place).unwrap_err();
        assert!(err.to_string().contains("not InPlace"), "{err}");
        assert!(serde_json::from_value::<UpdateStrategy>(json!({"method": "Sometimes"})).is_err());
    }

    #[test]
    fn a_child_passes_once_its_controller_caught_up_and_every_check_holds() {
        let strategy = UpdateStrategy {
            method: Method::RollingInPlace,
            checks: vec![
                "Available=True".parse().unwrap(),
                "Ready=True/Done".parse().unwrap(),
            ],
            ..UpdateStrategy::default()
        };
        let child = |observed: i64, available: &str| {
            json!({"metadata": {"generation": 2}, "status": {"observedGeneration": observed,
                "conditions": [{"type": "Available", "status": available},
                               {"type": "Ready", "status": "True", "reason": "Done"}]}})
        };
        assert!(strategy.passes(&child(2, "True")));
        assert!(!strategy.passes(&child(1, "True")), "stale status");
        assert!(!strategy.passes(&child(2, "False")));
        let wrong_reason = json!({"status": {"conditions": [
            {"type": "Available", "status": "True"},
            {"type": "Ready", "status": "True", "reason": "Other"}]}});
        assert!(!strategy.passes(&wrong_reason));
        // No checks: only the generation counts; a kind without status passes.
        assert!(UpdateStrategy::default().passes(&json!({"metadata": {"generation": 1}})));
    }
}
