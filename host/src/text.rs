//! Text for and from people: messages end up in conditions and Events, which have size limits; periods
//! come from flags and specs; what a command prints is YAML or JSON.

use std::io::Write;
use std::str::FromStr;
use std::time::Duration;

use serde::Serialize;

/// Cuts `text` to at most `max` bytes at a character boundary, marking the cut with `…`.
pub fn truncate(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max.saturating_sub('…'.len_utf8());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// A duration such as `10h`, `30m` or `1h30m`, or `0`.
pub fn parse_period(text: &str) -> Result<Duration, String> {
    if text.trim() == "0" {
        return Ok(Duration::ZERO);
    }
    let period: jiff::SignedDuration = text.parse().map_err(|e| format!("{e}"))?;
    Duration::try_from(period).map_err(|_| "a period cannot be negative".to_string())
}

/// How a command prints what it found: YAML for people, JSON for tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    Yaml,
    Json,
}

impl OutputFormat {
    /// The names a flag takes, in the order help lists them.
    pub const NAMES: [&str; 2] = ["yaml", "json"];

    /// Writes `value` as one document in this format.
    pub fn write(self, value: &impl Serialize, out: &mut impl Write) -> anyhow::Result<()> {
        match self {
            OutputFormat::Json => writeln!(out, "{}", serde_json::to_string_pretty(value)?)?,
            OutputFormat::Yaml => write!(out, "{}", serde_norway::to_string(value)?)?,
        }
        Ok(())
    }
}

impl FromStr for OutputFormat {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, String> {
        match name {
            "yaml" => Ok(OutputFormat::Yaml),
            "json" => Ok(OutputFormat::Json),
            other => Err(format!("{other}: not one of {}", Self::NAMES.join(", "))),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cuts_at_a_character_boundary_within_the_limit() {
        assert_eq!(super::truncate("short".into(), 10), "short");
        let cut = super::truncate("ééééé".into(), 8);
        assert!(cut.len() <= 8 && cut.ends_with('…'), "{cut}");
    }
}
