//! A lock file beside a file that is read, changed and replaced (`.NAME.lock`), so that two
//! processes updating one file (two warmup-costs runs on one cost file) take turns rather than
//! each replace what the other wrote. The lock is on a file of its own: the update replaces its
//! target by a rename ([`crate::atomic`]), which a lock on the target itself would not survive.
//! `flock(2)`: the kernel drops it when its holder dies, however it dies.

use anyhow::{Context, Result};
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use std::fs::{File, OpenOptions};
use std::path::Path;

/// An exclusive lock on `.NAME.lock` beside `target` (created if missing), for a
/// read-modify-write of `target` that must not interleave with another process's: the lock
/// file is not the target, so the target's atomic rename does not break the lock. Waits for a
/// holder, saying once on stderr, as `tool`, that it waits.
pub fn update_lock(tool: &str, target: &Path) -> Result<Flock<File>> {
    let name = target
        .file_name()
        .with_context(|| format!("{}: not a file path", target.display()))?;
    let folder = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let path = folder.join(format!(".{}.lock", name.to_string_lossy()));
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .with_context(|| {
            format!(
                "opening the lock file {} that guards {} (is its folder writable?)",
                path.display(),
                target.display()
            )
        })?;
    let file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(held) => return Ok(held),
        Err((file, Errno::EWOULDBLOCK)) => file,
        Err((_, e)) => return Err(e).with_context(|| format!("locking {}", path.display())),
    };
    eprintln!(
        "{tool}: waiting for another process updating {} (it holds {})",
        target.display(),
        path.display()
    );
    Flock::lock(file, FlockArg::LockExclusive)
        .map_err(|(_, e)| e)
        .with_context(|| format!("locking {}", path.display()))
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
