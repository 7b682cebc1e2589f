//! Shared by the integration tests: guest builds, the host as a real process, and waiting helpers.
#![allow(dead_code)] // each test binary uses a different part

pub mod conformance;
pub mod conversion;
pub mod decorator;
pub mod events;
pub mod guests;
pub mod host;
pub mod http;
pub mod kubectl;
pub mod monitoring;
pub mod myapp;
pub mod plan;
pub mod platform;
pub mod ports;
pub mod registry;
pub mod restart;
pub mod shard;
