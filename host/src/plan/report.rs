//! The plan's report: the parents that would change or fail, in YAML or JSON, and a summary line.

use std::fmt;
use std::io::Write;

use serde::Serialize;

use super::parent::{ParentPlan, Verdict};
use crate::text::OutputFormat;

/// How many parents would stay as they are, change, or fail.
#[derive(Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    pub unchanged: usize,
    pub changed: usize,
    pub failing: usize,
    pub deleting: usize,
}

impl Summary {
    pub fn of(plans: &[ParentPlan]) -> Summary {
        let mut summary = Summary::default();
        for plan in plans {
            match plan.verdict {
                Verdict::Unchanged => summary.unchanged += 1,
                Verdict::Changed => summary.changed += 1,
                Verdict::Failing => summary.failing += 1,
                Verdict::Deleting => summary.deleting += 1,
            }
        }
        summary
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "plan: {} unchanged, {} changed, {} failing",
            self.unchanged, self.changed, self.failing
        )?;
        if self.deleting > 0 {
            write!(f, ", {} being deleted (not planned)", self.deleting)?;
        }
        Ok(())
    }
}

/// The report document: the summary, then every parent that would change or fail.
#[derive(Serialize)]
struct Report<'a> {
    summary: &'a Summary,
    parents: Vec<&'a ParentPlan>,
}

/// Writes the report and returns its summary.
pub fn write(
    plans: &[ParentPlan],
    format: OutputFormat,
    out: &mut impl Write,
) -> anyhow::Result<Summary> {
    let summary = Summary::of(plans);
    let report = Report {
        summary: &summary,
        parents: plans
            .iter()
            .filter(|p| matches!(p.verdict, Verdict::Changed | Verdict::Failing))
            .collect(),
    };
    format.write(&report, out)?;
    Ok(summary)
}
