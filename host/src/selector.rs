//! Label selectors as people write them for `kubectl -l` (`team`, `team=a`, `tier!=db`,
//! `env in (prod,staging)`, `!legacy`), parsed once into kube's `Selector`.
//!
//! Why the host parses them instead of only passing the text to the API server: a decorator must
//! notice a parent that *stops* matching (its label removed), so it watches every parent and matches
//! in process (see `controller::selection`); the text is checked at start-up, where a typo fails with
//! the selector named rather than as a watch error later.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use kube::core::{Expression, Selector, SelectorExt};

/// A parsed label selector, with the text it came from (for messages and watch parameters).
#[derive(Clone, Debug, PartialEq)]
pub struct LabelSelector {
    text: String,
    selector: Selector,
}

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("label selector `{text}`: {reason}")]
pub struct SelectorError {
    text: String,
    reason: String,
}

impl LabelSelector {
    /// Whether an object with these labels is selected.
    pub fn matches(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        let empty = BTreeMap::new();
        self.selector.matches(labels.unwrap_or(&empty))
    }
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for LabelSelector {
    type Err = SelectorError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let fail = |reason: String| SelectorError {
            text: text.to_string(),
            reason,
        };
        let mut selector = Selector::default();
        for requirement in split_requirements(text) {
            selector.extend(parse_requirement(requirement.trim()).map_err(fail)?);
        }
        if selector.selects_all() {
            return Err(fail(
                "selects everything; give at least one requirement".into(),
            ));
        }
        Ok(LabelSelector {
            text: text.trim().to_string(),
            selector,
        })
    }
}

/// The comma-separated requirements, keeping the commas of `in (a,b)` sets.
fn split_requirements(text: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

fn parse_requirement(text: &str) -> Result<Expression, String> {
    let key = |k: &str| -> Result<String, String> {
        let k = k.trim();
        let valid = !k.is_empty()
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c));
        valid
            .then(|| k.to_string())
            .ok_or_else(|| format!("`{k}` is not a label key"))
    };
    if let Some(rest) = text.strip_prefix('!') {
        return Ok(Expression::DoesNotExist(key(rest)?));
    }
    if let Some((k, v)) = text.split_once("!=") {
        return Ok(Expression::NotEqual(key(k)?, v.trim().to_string()));
    }
    if let Some((k, v)) = text.split_once("==").or_else(|| text.split_once('=')) {
        return Ok(Expression::Equal(key(k)?, v.trim().to_string()));
    }
    for (word, notin) in [(" notin ", true), (" in ", false)] {
        if let Some((k, set)) = text.split_once(word) {
            let set = set.trim();
            let values = set
                .strip_prefix('(')
                .and_then(|s| s.strip_suffix(')'))
                .ok_or_else(|| format!("`{set}` is not a set such as (a,b)"))?;
            let values = values.split(',').map(|v| v.trim().to_string()).collect();
            return Ok(match notin {
                true => Expression::NotIn(key(k)?, values),
                false => Expression::In(key(k)?, values),
            });
        }
    }
    Ok(Expression::Exists(key(text)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn selects(selector: &str, pairs: &[(&str, &str)]) -> bool {
        let selector: LabelSelector = selector.parse().unwrap();
        selector.matches(Some(&labels(pairs)))
    }

    #[test]
    fn reads_kubectl_syntax() {
        assert!(selects("team", &[("team", "a")]));
        assert!(!selects("team", &[("other", "a")]));
        assert!(selects("team=a", &[("team", "a")]));
        assert!(selects("team==a", &[("team", "a")]));
        assert!(!selects("team=a", &[("team", "b")]));
        assert!(selects("team!=a", &[("team", "b")]));
        assert!(selects("!legacy", &[("team", "b")]));
        assert!(!selects("!legacy", &[("legacy", "")]));
        let set = "env in (prod, staging),team";
        assert!(selects(set, &[("env", "staging"), ("team", "x")]));
        assert!(!selects(set, &[("env", "dev"), ("team", "x")]));
        assert!(!selects(set, &[("env", "prod")]));
        assert!(selects("env notin (prod)", &[]));
    }

    #[test]
    fn refuses_what_is_no_selector() {
        for bad in ["", " , ", "te am", "env in prod"] {
            let err = bad.parse::<LabelSelector>().unwrap_err();
            assert!(err.to_string().starts_with("label selector"), "{err}");
        }
    }
}

#[cfg(test)]
mod fuzz_tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #![proptest_config(crate::fuzz::config())]

        /// Any text is a selector or a clear refusal; what parses prints as text that parses the same.
        #[test]
        fn fuzz_label_selectors_parse_or_refuse_and_print_what_they_parse(
            text in crate::fuzz::text("a-z0-9=!,()./ _-"),
        ) {
            if let Ok(selector) = text.parse::<LabelSelector>() {
                let printed = selector.to_string();
                let again: LabelSelector = printed.parse().expect("a printed selector parses");
                prop_assert_eq!(again.to_string(), printed);
            }
        }
    }
}
