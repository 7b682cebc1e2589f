//! Label selectors in kubectl's syntax (`app=web,tier in (a,b),!legacy`), the form a guest writes in
//! a selector's `label-selector`. kube-core matches label selectors but only parses the structured
//! (`matchLabels`/`matchExpressions`) form, so the text form is parsed here into its expressions.

use std::collections::BTreeSet;

use kube::core::{Expression, Selector};

/// Parses `text` into a selector; the error says which requirement is wrong.
pub fn parse_label_selector(text: &str) -> Result<Selector, String> {
    split_requirements(text)?
        .into_iter()
        .map(|requirement| parse_requirement(requirement.trim()))
        .collect()
}

/// The comma-separated requirements, with the commas inside `(...)` sets kept in their requirement.
fn split_requirements(text: &str) -> Result<Vec<&str>, String> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0u32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.checked_sub(1).ok_or("unbalanced `)`")?,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err("unbalanced `(`".into());
    }
    parts.push(&text[start..]);
    Ok(parts)
}

fn parse_requirement(text: &str) -> Result<Expression, String> {
    if text.is_empty() {
        return Err("an empty requirement".into());
    }
    if let Some(key) = text.strip_prefix('!') {
        return Ok(Expression::DoesNotExist(key_of(key)?));
    }
    for (operator, negated) in [("!=", true), ("==", false), ("=", false)] {
        if let Some((key, value)) = text.split_once(operator) {
            let (key, value) = (key_of(key)?, value_of(value)?);
            return Ok(if negated {
                Expression::NotEqual(key, value)
            } else {
                Expression::Equal(key, value)
            });
        }
    }
    for (operator, negated) in [(" notin ", true), (" in ", false)] {
        if let Some((key, set)) = text.split_once(operator) {
            let set = set
                .trim()
                .strip_prefix('(')
                .and_then(|set| set.strip_suffix(')'))
                .ok_or_else(|| format!("`{text}`: the values of `in`/`notin` go in `(...)`"))?;
            let values = set
                .split(',')
                .map(value_of)
                .collect::<Result<BTreeSet<_>, _>>()?;
            let key = key_of(key)?;
            return Ok(if negated {
                Expression::NotIn(key, values)
            } else {
                Expression::In(key, values)
            });
        }
    }
    Ok(Expression::Exists(key_of(text)?))
}

fn key_of(text: &str) -> Result<String, String> {
    let key = text.trim();
    let valid = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    if valid {
        Ok(key.to_string())
    } else {
        Err(format!("`{key}` is not a label key"))
    }
}

fn value_of(text: &str) -> Result<String, String> {
    let value = text.trim();
    if value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        Ok(value.to_string())
    } else {
        Err(format!("`{value}` is not a label value"))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use kube::core::SelectorExt;

    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn kubectl_syntax_matches_as_kubectl_does() {
        let selector = parse_label_selector("app=web, tier in (a, b),!legacy,env!=prod").unwrap();
        assert!(selector.matches(&labels(&[("app", "web"), ("tier", "b")])));
        assert!(!selector.matches(&labels(&[("app", "web"), ("tier", "c")])));
        assert!(!selector.matches(&labels(&[("app", "web"), ("tier", "a"), ("legacy", "")])));
        assert!(!selector.matches(&labels(&[("app", "web"), ("tier", "a"), ("env", "prod")])));
        let exists = parse_label_selector("example.com/team").unwrap();
        assert!(exists.matches(&labels(&[("example.com/team", "x")])));
        assert!(!exists.matches(&labels(&[])));
    }

    #[test]
    fn a_malformed_selector_is_an_error_naming_the_requirement() {
        for bad in ["app=web,", "tier in a,b", "tier in (a", "a b=c", "app=w eb"] {
            assert!(parse_label_selector(bad).is_err(), "{bad} was accepted");
        }
    }
}
