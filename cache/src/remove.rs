//! Removing an op's record from a cache folder without harming a run that uses it: under the
//! locks its writers take (docs/CONTRACT.md, "The record/replay harness" and warmup-publish).
//!
//! - `.<op>.lock`, the update lock of the record, which the harness's appends and folds and
//!   warmup-publish hold while they write: taken exclusively, waiting for a writer to finish;
//! - `.<op>.sessions`, which tells whether a record session is live (`protocol::session`); one
//!   is: the op is in use and left as it is;
//! - `.<op>.costs.json.lock`, the cost file's update lock (warmup-costs, warmup-publish).
//!
//! The lock files themselves stay: a process that opened one before it was unlinked would lock
//! a file nobody else sees. The files are removed by name: one that is a symlink goes, never
//! what it points to; a folder reached through a link (a team folder) has its files removed.

use crate::entries::Entry;
use anyhow::{Context, Result};
use protocol::history::{costs_path, record_lock_target, sessions_path};
use protocol::session::Sessions;
use toolkit::lock;

/// How a removal went.
#[derive(Debug, PartialEq, Eq)]
pub enum Removed {
    Done,
    /// A record session of the op is live in the folder: nothing removed.
    InUse,
}

/// Removes `entry`'s files under its writers' locks.
pub fn remove(tool: &str, entry: &Entry) -> Result<Removed> {
    let dir = &entry.folder;
    let op = &entry.op;
    let _record = lock::update_lock(tool, &record_lock_target(dir, op))?;
    let _sessions = match protocol::session::sessions(dir, op)? {
        Sessions::Idle(held) => held,
        Sessions::Live => return Ok(Removed::InUse),
    };
    let _costs = lock::update_lock(tool, &costs_path(dir, op))?;
    for file in entry.files() {
        match std::fs::remove_file(&file) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("removing {}", file.display())),
        }
    }
    Ok(Removed::Done)
}

/// Whether a live record session holds `entry`'s op, as [`remove`] would find it, waiting for
/// nothing and making nothing (`--dry-run`): its `.<op>.sessions` is held by someone.
pub fn in_use(entry: &Entry) -> Result<bool> {
    if !sessions_path(&entry.folder, &entry.op).exists() {
        return Ok(false);
    }
    let found = protocol::session::sessions(&entry.folder, &entry.op)?;
    Ok(matches!(found, Sessions::Live))
}
