//! The harness protocol the warmup tools share (docs/CONTRACT.md), and only that: what two tools
//! must agree on lives here, everything else stays in its tool's crate.
//!
//! - [`env`]: the harness's environment variable names;
//! - [`layout`]: every path inside a scratch folder, and [`layout::Scratch::lock`], the scratch
//!   lock ([`lock::LOCK_FD`] is the caller's handshake);
//! - [`plan`]: `SCRATCH/plan.json`, which warmup-shard writes and the others read;
//! - [`records`]: the `{kernel: {key: config}}` shape check and counts that warmup-merge and
//!   warmup-publish both report;
//! - [`summary`]: the run-summary lines scripts read; [`shell`]: quoting for POSIX shells;
//! - [`atomic`]: writing files whole or not at all; [`cli`]: argument parsing, `--op`, and the
//!   generated completions and man pages; [`exit`] and [`Status`]: the exit statuses.
//!
//! Python's `json`, which the record files are written with, is the `pyjson` crate's.

pub mod atomic;
pub mod cli;
pub mod env;
mod exit;
pub mod layout;
pub mod lock;
pub mod plan;
pub mod records;
pub mod shell;
pub mod status;
pub mod summary;

pub use exit::{exit, Status, USAGE};
