//! The end-to-end tests of `run` hosts, on one shared control plane: each test's host watches only
//! its own namespace (or selects its parents by a label no other test uses), so they run side by side.

#[path = "../common/mod.rs"]
mod common;

mod decorator;
mod fenced_leader;
mod go_guest;
mod guest_memory;
mod hotswap;
mod myapp;
mod oci;
mod ownership;
mod plan;
mod related;
mod restart;
mod ring;
mod shadow;
mod swap_writes;
mod update_strategy;
