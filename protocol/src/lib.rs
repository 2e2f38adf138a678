//! What the warmup tools share: the harness's environment names, the scratch layout, the plan
//! that `warmup-shard` writes and the others read, exit statuses, and atomic file writes.
//!
//! Only code that two tools need lives here; everything else stays in its tool's crate.

pub mod atomic;
pub mod cli;
pub mod env;
pub mod exit;
pub mod fxhash;
pub mod layout;
pub mod plan;
pub mod pyjson;
pub mod shell;
pub mod summary;

pub use exit::{exit, Status};
