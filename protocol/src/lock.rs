//! The scratch lock (docs/CONTRACT.md, "The scratch lock"): a scratch folder serves one run at a
//! time. Two runs on one scratch would replace each other's plan and shards and publish each
//! other's configs; the second is refused before it touches anything.
//!
//! `flock(2)` rather than a pid file alone: the kernel drops the lock when its holder dies, however
//! it dies, so a lock is never left stale. The pid in the file only names the holder.
//!
//! A lock lives as long as any process holding its open file: a run killed outright leaves it
//! held by warmup-spawn's watchdog, which inherited it and lets go once it has killed the run's
//! processes (up to 10 s), so that no next run starts while they could still write there. A tool
//! finding the lock held after the process named in the file has ended waits for that
//! ([`LEFTOVERS`]) rather than refuse a run started again at once.

use crate::layout::Scratch;
use anyhow::{bail, Context, Result};
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, Instant};
use toolkit::lock::{try_lock, Taken};

/// Set by a caller that holds the lock for a whole run (scripts/warmup): its open descriptor
/// on `SCRATCH/.lock`. A tool that finds it open on that same file runs under it.
pub const LOCK_FD: &str = "WARMUP_SCRATCH_LOCK_FD";

/// How long a lock is waited for once the process named in it has ended: longer than a killed
/// run's watchdog takes to kill what the run left (spawn's `watchdog::KILL_FOR`, 10 s).
pub const LEFTOVERS: Duration = Duration::from_secs(15);

/// How often a lock held by what an ended run left is tried again.
const RETRY: Duration = Duration::from_millis(50);

/// A held scratch lock, released when dropped (or when the process ends).
#[derive(Debug)]
pub struct ScratchLock {
    /// `None` when the caller's lock covers us, or when the scratch cannot hold a lock file
    /// (read-only), where no other run can write either.
    _held: Option<Flock<File>>,
}

impl Scratch {
    /// Takes the scratch's lock, or runs under the caller's ([`LOCK_FD`]); exit 2's error,
    /// naming the scratch and the holder, when another process holds it. `tool` says that it
    /// waits, where it waits for what an ended run left ([`LEFTOVERS`]).
    pub fn lock(&self, tool: &str) -> Result<ScratchLock> {
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
        let locking = || format!("locking {}", path.display());
        let held = match try_lock(file, FlockArg::LockExclusiveNonblock).with_context(locking)? {
            Taken::Held(held) => held,
            Taken::Busy(file) => {
                self.after_leftovers(tool, file.as_raw_fd())?;
                // Ours now: flock(2) again on the same open file keeps the lock, in nix's hands.
                match try_lock(file, FlockArg::LockExclusiveNonblock).with_context(locking)? {
                    Taken::Held(held) => held,
                    Taken::Busy(_) => return Err(self.in_use()),
                }
            }
        };
        if writable {
            write_pid(&held).with_context(|| format!("writing this pid to {}", path.display()))?;
        }
        Ok(ScratchLock { _held: Some(held) })
    }

    /// Takes the lock for the caller, on the descriptor it lends ([`LOCK_FD`], open on this
    /// scratch's lock file), so that the lock outlives this process: the caller holds it until
    /// it closes that descriptor or ends, and the tools it runs then run under it. The holder
    /// named in the file is the caller (this process's parent). Exit 2's error, as [`lock`]'s,
    /// when another process holds it; waits as it does for what an ended run left.
    ///
    /// [`lock`]: Scratch::lock
    pub fn lock_for_caller(&self, tool: &str) -> Result<()> {
        let path = self.lock_file();
        let Some(fd) = lent_fd(&path) else {
            bail!(
                "{LOCK_FD} names no descriptor of the caller open on {}: open it (e.g. `exec \
                 {{fd}}<>{}` in bash), export {LOCK_FD} with its number, then take the lock",
                path.display(),
                path.display()
            );
        };
        // flock(2) on the caller's descriptor locks the open file description the caller holds.
        if !take(fd).with_context(|| format!("locking {}", path.display()))? {
            self.after_leftovers(tool, fd)?;
        }
        let caller = nix::unistd::getppid();
        std::fs::write(&path, format!("{caller}\n"))
            .with_context(|| format!("writing the caller's pid to {}", path.display()))
    }

    /// Takes the lock on `fd` (open on this scratch's lock file, found held) once what an
    /// ended run left lets go of it, waiting up to [`LEFTOVERS`] and saying so once; exit 2's
    /// error at once where the holder named in the file lives (or none is named), and after
    /// the wait where the lock is still held.
    fn after_leftovers(&self, tool: &str, fd: RawFd) -> Result<()> {
        let path = self.lock_file();
        let Some(pid) = self.holder().filter(|&pid| ended(pid)) else {
            return Err(self.in_use());
        };
        eprintln!(
            "{tool}: {}: pid {pid}, which holds this scratch, has ended; waiting up to {} s for \
             what it left (a killed run's watchdog ending its processes) to let go of {}",
            self.root().display(),
            LEFTOVERS.as_secs(),
            path.display()
        );
        let end = Instant::now() + LEFTOVERS;
        while Instant::now() < end {
            std::thread::sleep(RETRY);
            if take(fd).with_context(|| format!("locking {}", path.display()))? {
                return Ok(());
            }
        }
        bail!(
            "{}: this scratch folder is still locked {} s after pid {pid}, which held it, ended: \
             a process it started holds {} open (`fuser -v {}` names it); end that process, or \
             give another scratch folder",
            self.root().display(),
            LEFTOVERS.as_secs(),
            path.display(),
            path.display()
        )
    }

    /// The pid the holder wrote in the lock file, if any.
    fn holder(&self) -> Option<i32> {
        std::fs::read_to_string(self.lock_file())
            .ok()
            .and_then(|pid| pid.trim().parse::<i32>().ok())
            .filter(|&pid| pid > 0)
    }

    /// The refusal when another run holds the lock, naming the scratch and the holder.
    fn in_use(&self) -> anyhow::Error {
        let path = self.lock_file();
        let holder = self
            .holder()
            .map_or_else(|| "another process".to_owned(), |pid| format!("pid {pid}"));
        anyhow::anyhow!(
            "{}: this scratch folder is in use by another run ({holder} holds {}); wait for it \
             to end, or give another scratch folder",
            self.root().display(),
            path.display()
        )
    }
}

/// An exclusive `flock(2)` on `fd`, not waiting: whether it was taken. The descriptor is
/// borrowed (nix's `Flock` would own it, and unlock it when dropped).
fn take(fd: RawFd) -> io::Result<bool> {
    // SAFETY: flock(2) only locks the open file description behind our descriptor `fd`.
    #[allow(unsafe_code)]
    if unsafe { nix::libc::flock(fd, nix::libc::LOCK_EX | nix::libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(nix::libc::EWOULDBLOCK) => Ok(false),
        _ => Err(e),
    }
}

/// Whether process `pid` has ended (a zombie, not yet reaped, has not).
fn ended(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) == Err(Errno::ESRCH)
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
        let held = scratch.lock("test").expect("first lock");
        let pid = std::fs::read_to_string(scratch.lock_file()).expect("pid written");
        assert_eq!(pid.trim(), std::process::id().to_string());
        let err = format!("{:#}", scratch.lock("test").expect_err("second lock"));
        assert!(
            err.contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        assert!(err.contains(&dir.path().display().to_string()), "{err}");
        drop(held);
        scratch.lock("test").expect("free again once dropped");
    }
}
