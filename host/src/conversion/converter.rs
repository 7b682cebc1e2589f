//! What the webhook asks of the host and tells it back: the converter it calls for each object and
//! the observer it tells how each review ended. Below the server and the webhook's start, which both
//! take them.

use std::sync::Arc;

use serde_json::Value;

/// Converts one object to the given apiVersion, shareable with the server's blocking threads.
pub type Converter = Arc<dyn Fn(&Value, &str) -> Result<Value, String> + Send + Sync>;

/// How one review ended: `result` is `success` or the failed review's reason (`ConverterFailed`,
/// `ConversionInvalid`, `ConversionMetadataChanged`, `ConversionFailed`, `ConversionBusy`,
/// `BadRequest`), `message` what the API server was answered when it failed.
#[derive(Clone, Copy, Debug)]
pub struct Outcome<'a> {
    pub result: &'static str,
    pub message: Option<&'a str>,
}

/// Told how each review ended, for metrics and Events.
pub type Observer = Arc<dyn Fn(&Outcome) + Send + Sync>;
