//! Removing an op's record from a cache folder without harming a run that uses it: under the
//! locks its writers take (docs/CONTRACT.md, "The record/replay harness" and warmup-publish).
//!
//! - `.<op>.lock`, the update lock of the record, which the harness's appends and folds and
//!   warmup-publish hold while they write: taken exclusively, waiting for a writer to finish;
//! - `.<op>.sessions`, which every live record session holds shared for its whole life: tried
//!   exclusively without waiting; held by someone, the op is in use and left as it is;
//! - `.<op>.costs.json.lock`, the cost file's update lock (warmup-costs, warmup-publish).
//!
//! The lock files themselves stay: a process that opened one before it was unlinked would lock
//! a file nobody else sees. The files are removed by name: one that is a symlink goes, never
//! what it points to; a folder reached through a link (a team folder) has its files removed.

use crate::entries::Entry;
use anyhow::{Context, Result};
use nix::fcntl::FlockArg;
use protocol::history::{costs_path, record_lock_target, sessions_path};
use toolkit::lock::{self, Taken};

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
    let sessions = sessions_path(dir, op);
    let file = lock::open_said(&sessions, || format!("opening {}", sessions.display()))?;
    let _sessions = match lock::try_lock(file, FlockArg::LockExclusiveNonblock)
        .with_context(|| format!("locking {}", sessions.display()))?
    {
        Taken::Held(held) => held,
        Taken::Busy(_) => return Ok(Removed::InUse),
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
    let sessions = sessions_path(&entry.folder, &entry.op);
    let file = match std::fs::File::options()
        .read(true)
        .write(true)
        .open(&sessions)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => {
            return Err(e).with_context(|| {
                format!("opening {} (is the folder writable?)", sessions.display())
            })
        }
    };
    let taken = lock::try_lock(file, FlockArg::LockExclusiveNonblock)
        .with_context(|| format!("locking {}", sessions.display()))?;
    Ok(matches!(taken, Taken::Busy(_)))
}
