//! The scratch lock (docs/CONTRACT.md, "The scratch lock"): a scratch folder serves one run at a
//! time. Two runs on one scratch would replace each other's plan and shards and publish each
//! other's configs; the second is refused before it touches anything.
//!
//! `flock(2)` rather than a pid file alone: the kernel drops the lock when its holder dies, however
//! it dies, so a lock is never left stale. The pid in the file only names the holder.

use crate::layout::Scratch;
use anyhow::{bail, Context, Result};
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use toolkit::lock::{try_lock, Taken};

/// Set by a caller that holds the lock for a whole run (scripts/warmup): its open descriptor
/// on `SCRATCH/.lock`. A tool that finds it open on that same file runs under it.
pub const LOCK_FD: &str = "WARMUP_SCRATCH_LOCK_FD";

/// A held scratch lock, released when dropped (or when the process ends).
#[derive(Debug)]
pub struct ScratchLock {
    /// `None` when the caller's lock covers us, or when the scratch cannot hold a lock file
    /// (read-only), where no other run can write either.
    _held: Option<Flock<File>>,
}

impl Scratch {
    /// Takes the scratch's lock, or runs under the caller's ([`LOCK_FD`]); exit 2's error,
    /// naming the scratch and the holder, when another process holds it.
    pub fn lock(&self) -> Result<ScratchLock> {
        let path = self.lock_file();
        if held_by_caller(&path) {
            return Ok(ScratchLock { _held: None });
        }
        let (file, writable) = match open(&path, true) {
            Ok(file) => (file, true),
            Err(e) if read_only(&e) => match open(&path, false) {
                Ok(file) => (file, false),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Ok(ScratchLock { _held: None })
                }
                Err(e) => return Err(e).with_context(|| cannot_open(&path)),
            },
            Err(e) => return Err(e).with_context(|| cannot_open(&path)),
        };
        let taken = try_lock(file, FlockArg::LockExclusiveNonblock)
            .with_context(|| format!("locking {}", path.display()))?;
        match taken {
            Taken::Held(held) => {
                if writable {
                    write_pid(&held)
                        .with_context(|| format!("writing this pid to {}", path.display()))?;
                }
                Ok(ScratchLock { _held: Some(held) })
            }
            Taken::Busy(_) => Err(self.in_use()),
        }
    }

    /// Takes the lock for the caller, on the descriptor it lends ([`LOCK_FD`], open on this
    /// scratch's lock file), so that the lock outlives this process: the caller holds it until
    /// it closes that descriptor or ends, and the tools it runs then run under it. The holder
    /// named in the file is the caller (this process's parent). Exit 2's error, as [`lock`]'s,
    /// when another process holds it.
    ///
    /// [`lock`]: Scratch::lock
    pub fn lock_for_caller(&self) -> Result<()> {
        let path = self.lock_file();
        let Some(fd) = lent_fd(&path) else {
            bail!(
                "{LOCK_FD} names no descriptor of the caller open on {}: open it (e.g. `exec \
                 {{fd}}<>{}` in bash), export {LOCK_FD} with its number, then take the lock",
                path.display(),
                path.display()
            );
        };
        // The caller's descriptor is borrowed for the call alone: flock(2) on it locks the open
        // file description the caller holds (nix's `Flock` would own it, and unlock on drop).
        #[allow(unsafe_code)]
        let locked = unsafe { nix::libc::flock(fd, nix::libc::LOCK_EX | nix::libc::LOCK_NB) };
        if locked != 0 {
            return match Errno::last() {
                Errno::EWOULDBLOCK => Err(self.in_use()),
                e => Err(e).with_context(|| format!("locking {}", path.display())),
            };
        }
        let caller = nix::unistd::getppid();
        std::fs::write(&path, format!("{caller}\n"))
            .with_context(|| format!("writing the caller's pid to {}", path.display()))
    }

    /// The refusal when another run holds the lock, naming the scratch and the holder.
    fn in_use(&self) -> anyhow::Error {
        let path = self.lock_file();
        let holder = std::fs::read_to_string(&path)
            .ok()
            .and_then(|pid| pid.trim().parse::<u32>().ok())
            .map_or_else(|| "another process".to_owned(), |pid| format!("pid {pid}"));
        anyhow::anyhow!(
            "{}: this scratch folder is in use by another run ({holder} holds {}); wait for it \
             to end, or give another scratch folder",
            self.root().display(),
            path.display()
        )
    }
}

/// The lock file, for writing the holder's pid; read-only where the scratch is.
fn open(path: &Path, write: bool) -> io::Result<File> {
    if write {
        toolkit::lock::open(path)
    } else {
        File::open(path)
    }
}

fn read_only(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem
    )
}

fn cannot_open(path: &Path) -> String {
    format!(
        "opening the scratch lock {} (is the scratch folder there and writable?)",
        path.display()
    )
}

fn write_pid(file: &File) -> io::Result<()> {
    file.set_len(0)?;
    let mut file = file;
    writeln!(file, "{}", std::process::id())
}

/// Whether [`LOCK_FD`] names a descriptor of this process open on `path` itself (same device
/// and inode): a stale or foreign value is ignored, and the tool takes its own lock.
pub fn held_by_caller(path: &Path) -> bool {
    lent_fd(path).is_some()
}

/// The descriptor number [`LOCK_FD`] holds, trimmed; `None` when unset or not a number.
pub fn lent_fd_number() -> Option<i32> {
    std::env::var(LOCK_FD)
        .ok()
        .and_then(|fd| fd.trim().parse::<i32>().ok())
        .filter(|fd| *fd >= 0)
}

/// The descriptor [`LOCK_FD`] names, when it is open in this process on `path` itself.
fn lent_fd(path: &Path) -> Option<i32> {
    let fd = lent_fd_number()?;
    // The /proc entry follows to the open file, so no descriptor needs borrowing.
    match (
        std::fs::metadata(format!("/proc/self/fd/{fd}")),
        std::fs::metadata(path),
    ) {
        (Ok(held), Ok(ours)) => {
            (held.dev() == ours.dev() && held.ino() == ours.ino()).then_some(fd)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_naming_the_scratch_and_the_holder() {
        let dir = tempfile::tempdir().expect("tempdir");
        let scratch = Scratch::new(dir.path());
        let held = scratch.lock().expect("first lock");
        let pid = std::fs::read_to_string(scratch.lock_file()).expect("pid written");
        assert_eq!(pid.trim(), std::process::id().to_string());
        let err = format!("{:#}", scratch.lock().expect_err("second lock"));
        assert!(
            err.contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        assert!(err.contains(&dir.path().display().to_string()), "{err}");
        drop(held);
        scratch.lock().expect("free again once dropped");
    }
}
