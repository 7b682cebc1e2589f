//! Value parsers the flags share, below every file of `cli` that uses them.

use std::str::FromStr;

use clap::builder::{PossibleValuesParser, TypedValueParser};

/// A flag that takes one of `names` (listed by `--help`), parsed by the domain type's own `FromStr`:
/// the types the flags give stay free of clap.
pub fn one_of<T>(names: &'static [&'static str]) -> impl TypedValueParser<Value = T>
where
    T: FromStr + Clone + Send + Sync + 'static,
    T::Err: std::fmt::Debug,
{
    PossibleValuesParser::new(names).map(|name| name.parse().expect("one of the names"))
}
