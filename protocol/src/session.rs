//! Whether a record session of an op is live in a record folder, the one rule warmup-publish
//! (before it folds a journal) and warmup-cache (before it removes a record) ask by: every live
//! record session holds `flock(LOCK_SH)` on `DIR/.<op>.sessions` for its whole life (the
//! harness's writer.py), so an exclusive lock that cannot be taken means one is live.

use crate::history::sessions_path;
use anyhow::{Context, Result};
use nix::fcntl::{Flock, FlockArg};
use std::ffi::OsStr;
use std::fs::File;
use std::path::Path;
use toolkit::lock::Taken;

/// What `DIR/.<op>.sessions` says.
#[derive(Debug)]
pub enum Sessions {
    /// No record session is live; none starts while this lock is held.
    Idle(Flock<File>),
    /// A record session holds it.
    Live,
}

/// Asks `DIR/.<op>.sessions` (created if missing) whether a record session of `op` is live.
pub fn sessions(dir: &Path, op: impl AsRef<OsStr>) -> Result<Sessions> {
    let path = sessions_path(dir, op);
    let file = toolkit::lock::open_said(&path, || {
        format!(
            "opening {}, which tells whether a record session is live",
            path.display()
        )
    })?;
    match toolkit::lock::try_lock(file, FlockArg::LockExclusiveNonblock)
        .with_context(|| format!("locking {}", path.display()))?
    {
        Taken::Held(held) => Ok(Sessions::Idle(held)),
        Taken::Busy(_) => Ok(Sessions::Live),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_holder_is_a_live_session_and_none_is_idle() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(matches!(sessions(dir.path(), "mm"), Ok(Sessions::Idle(_))));
        let file = File::open(sessions_path(dir.path(), "mm")).expect("made");
        let _shared = Flock::lock(file, FlockArg::LockSharedNonblock).expect("shared");
        assert!(matches!(sessions(dir.path(), "mm"), Ok(Sessions::Live)));
    }
}
