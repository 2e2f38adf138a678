//! Lock files, `flock(2)`: the kernel drops a lock when its holder dies, however it dies, so
//! none is ever left stale. [`open`] and [`try_lock`] are how every lock of the tools is taken
//! (the scratch lock, a shard's lock, an update lock); [`update_lock`] is a lock file beside a
//! file that is read, changed and replaced (`.NAME.lock`), so that two processes updating one
//! file (two warmup-costs runs on one cost file) take turns rather than each replace what the
//! other wrote. That lock is on a file of its own: the update replaces its target by a rename
//! ([`crate::atomic`]), which a lock on the target itself would not survive.

use anyhow::{Context, Result};
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

/// Opens the lock file at `path` for reading and writing (its holder may write its name in it),
/// created if missing, never truncated, never through a symbolic link there
/// ([`crate::file::open_own`]: a lock file may be in a folder others write in).
pub fn open(path: &Path) -> io::Result<File> {
    crate::file::open_own(
        path,
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false),
    )
}

/// [`open`], its error said as `opening` (what the file is for) asks whether the folder is
/// writable; a symbolic link there is said alone, as its message names the file and what to do.
pub fn open_said(path: &Path, opening: impl FnOnce() -> String) -> Result<File> {
    open(path).map_err(|e| {
        if crate::file::is_link(&e) {
            anyhow::Error::new(e)
        } else {
            anyhow::Error::new(e).context(format!("{} (is its folder writable?)", opening()))
        }
    })
}

/// How taking a lock went when it did not fail.
#[derive(Debug)]
pub enum Taken {
    /// Held until dropped (or the process ends).
    Held(Flock<File>),
    /// Another process holds it (a non-blocking `how`): the file, to read who.
    Busy(File),
}

/// Takes the lock `how` on `file`.
pub fn try_lock(file: File, how: FlockArg) -> io::Result<Taken> {
    match Flock::lock(file, how) {
        Ok(held) => Ok(Taken::Held(held)),
        Err((file, Errno::EWOULDBLOCK)) => Ok(Taken::Busy(file)),
        Err((_, e)) => Err(e.into()),
    }
}

/// An exclusive lock on `.NAME.lock` beside `target` (created if missing), for a
/// read-modify-write of `target` that must not interleave with another process's: the lock
/// file is not the target, so the target's atomic rename does not break the lock. Waits for a
/// holder, saying once on stderr, as `tool`, that it waits.
pub fn update_lock(tool: &str, target: &Path) -> Result<Flock<File>> {
    let name = target
        .file_name()
        .with_context(|| format!("{}: not a file path", target.display()))?;
    // Built from the name's bytes: a name that is not UTF-8 locks the file its other writers lock.
    let mut lock_name = std::ffi::OsString::from(".");
    lock_name.push(name);
    lock_name.push(".lock");
    let path = crate::atomic::folder_of(target).join(lock_name);
    let file = open_said(&path, || {
        format!(
            "opening the lock file {} that guards {}",
            path.display(),
            target.display()
        )
    })?;
    let locking = || format!("locking {}", path.display());
    let file = match try_lock(file, FlockArg::LockExclusiveNonblock).with_context(locking)? {
        Taken::Held(held) => return Ok(held),
        Taken::Busy(file) => file,
    };
    eprintln!(
        "{tool}: waiting for another process updating {} (it holds {})",
        target.display(),
        path.display()
    );
    Flock::lock(file, FlockArg::LockExclusive)
        .map_err(|(_, e)| e)
        .with_context(locking)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_update_lock_is_a_file_beside_the_target_held_until_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("costs.json");
        let held = update_lock("test", &target).expect("lock");
        let file = File::open(dir.path().join(".costs.json.lock")).expect("beside");
        assert!(
            Flock::lock(file, FlockArg::LockExclusiveNonblock).is_err(),
            "held"
        );
        drop(held);
        let file = File::open(dir.path().join(".costs.json.lock")).expect("beside");
        assert!(Flock::lock(file, FlockArg::LockExclusiveNonblock).is_ok());
        assert!(!target.exists());
    }
}
