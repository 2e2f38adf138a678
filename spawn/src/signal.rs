//! Signals, the nextest way: the spawner blocks SIGINT, SIGTERM, SIGHUP and SIGCHLD and reads
//! them from a signalfd in its poll loop, so no handler runs at an arbitrary point and a signal
//! can never be lost between a check and a wait. A child gets the caller's signal mask and
//! SIGCHLD disposition back before it execs, and dies with the spawner (PR_SET_PDEATHSIG).
//!
//! The spawner's own parent dying is a stop too: PR_SET_PDEATHSIG on the spawner turns it into
//! a SIGTERM, read like any other, so the children get their grace. It fires when the parent
//! *thread* ends: a caller that starts warmup-spawn from a thread that ends before the run does
//! stops the run.
//!
//! When warmup-spawn itself is SIGKILLed, PR_SET_PDEATHSIG reaches only its direct children;
//! the watchdog (`watchdog`) stops the rest. On every other way out (a signal, a timeout, a child
//! leader exiting) the spawner stops whole process groups, the processes carrying the shard's
//! marker, and orphans that came back to it as subreaper, so nothing is left behind.
//!
//! SIGTTOU is blocked as well: under `scripts/warmup` the spawner runs in a background process
//! group, and a terminal with `tostop` set would otherwise stop it at its first progress line.

use anyhow::{Context, Result};
use nix::sys::signal::{SigHandler, SigSet, SigmaskHow, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::unistd::Pid;
use std::os::fd::{AsFd, BorrowedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::Command;

/// The signals that stop a run; a second one skips the grace period.
pub const STOP: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];

/// What a stop signal asks of every job of the run, the sweep's children and the measurement
/// alike (cargo-nextest's `ShutdownRequest`): the first one a graceful stop (SIGTERM, SIGKILL
/// after the grace), any later one a kill at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShutdownRequest {
    Once(Signal),
    Twice(Signal),
}

/// The run's stop signals so far: which request the next one makes, and which stopped the run.
#[derive(Debug, Default, Clone, Copy)]
pub struct Shutdown {
    first: Option<Signal>,
}

impl Shutdown {
    /// The request `sig` makes, coming after those seen so far.
    pub fn request(&mut self, sig: Signal) -> ShutdownRequest {
        match self.first {
            None => {
                self.first = Some(sig);
                ShutdownRequest::Once(sig)
            }
            Some(_) => ShutdownRequest::Twice(sig),
        }
    }

    /// The signal that stopped the run, if one did.
    pub fn stopped_by(&self) -> Option<Signal> {
        self.first
    }
}

/// The spawner's signalfd and what a child must get back before exec.
#[derive(Debug)]
pub struct Signals {
    fd: SignalFd,
    child: ChildSetup,
}

/// What a child restores in `pre_exec`: the caller's signal mask and SIGCHLD disposition.
#[derive(Debug, Clone, Copy)]
pub struct ChildSetup {
    mask: SigSet,
    chld_ignored: bool,
    parent: Pid,
    /// Dies with the spawner (PR_SET_PDEATHSIG): every job but the measurement, which ends by
    /// its gate instead ("The gate").
    dies_with_spawner: bool,
    /// A descriptor of the spawner's, close-on-exec there, that this child inherits (the
    /// measurement's end of the gate, a tool's lent scratch lock).
    inherits: Option<RawFd>,
}

impl Signals {
    /// Blocks the stop signals and SIGCHLD in this (the main) thread and opens a signalfd on them.
    ///
    /// Call it before any other thread starts: threads inherit the mask of their creator. Also
    /// makes this process a child subreaper, so orphaned grandchildren come back to it to be
    /// reaped and killed.
    ///
    /// `parent` is this process's parent as it was at the start: if it is gone already, the run
    /// stops as if it had died a moment later.
    pub fn install(parent: Pid) -> Result<Signals> {
        let mut set = SigSet::empty();
        for s in STOP {
            set.add(s);
        }
        set.add(Signal::SIGCHLD);
        let mut blocked = set;
        blocked.add(Signal::SIGTTOU);
        let mask = blocked
            .thread_swap_mask(SigmaskHow::SIG_BLOCK)
            .context("blocking signals")?;
        // A caller that ignores SIGCHLD would make the kernel reap our children behind our back,
        // and waitpid would never report them: take the default back for ourselves.
        // SAFETY: installing SIG_DFL runs no handler code; no other thread exists yet.
        #[allow(unsafe_code)]
        let old = unsafe {
            nix::sys::signal::sigaction(
                Signal::SIGCHLD,
                &nix::sys::signal::SigAction::new(
                    SigHandler::SigDfl,
                    nix::sys::signal::SaFlags::empty(),
                    SigSet::empty(),
                ),
            )
        }
        .context("resetting SIGCHLD")?;
        let fd = SignalFd::with_flags(&set, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
            .context("opening a signalfd")?;
        #[cfg(target_os = "linux")]
        {
            nix::sys::prctl::set_child_subreaper(true).context("becoming a child subreaper")?;
            nix::sys::prctl::set_pdeathsig(Signal::SIGTERM)
                .context("asking for a signal when the caller dies")?;
            // It may have died before the prctl: then no signal would come.
            if nix::unistd::getppid() != parent {
                nix::sys::signal::raise(Signal::SIGTERM).context("stopping: the caller is gone")?;
            }
        }
        Ok(Signals {
            fd,
            child: ChildSetup {
                mask,
                chld_ignored: matches!(old.handler(), SigHandler::SigIgn),
                parent: nix::unistd::getpid(),
                dies_with_spawner: true,
                inherits: None,
            },
        })
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The stop signals that arrived since the last call, in order; SIGCHLD only wakes the loop.
    pub fn read(&self) -> Result<Vec<Signal>> {
        let mut stops = Vec::new();
        while let Some(info) = self.fd.read_signal().context("reading the signalfd")? {
            let signo = i32::try_from(info.ssi_signo).unwrap_or(0);
            if let Ok(sig) = Signal::try_from(signo) {
                if STOP.contains(&sig) {
                    stops.push(sig);
                }
            }
        }
        Ok(stops)
    }

    pub fn child_setup(&self) -> ChildSetup {
        self.child
    }
}

impl ChildSetup {
    /// The same, but the child outlives the spawner: the measurement, which a killed spawner's
    /// closed gate ends (no test before it opens, SIGTERM after).
    pub fn outliving(mut self) -> ChildSetup {
        self.dies_with_spawner = false;
        self
    }

    /// The same, and the child inherits `fd` (close-on-exec in the spawner) under its number.
    fn inheriting(mut self, fd: RawFd) -> ChildSetup {
        self.inherits = Some(fd);
        self
    }

    /// Starts `cmd` as a job of the run, lending it a descriptor where given: `lent` is the value
    /// of `var` that names it and the descriptor, which the child
    /// [inherits](Self::inheriting) under its number; without one `var` is removed, so that the
    /// child never reads one the spawner was lent. With `var` `None` nothing is lent. The one way
    /// warmup-spawn starts a process (the sweep's children, the tools, the measurement), besides
    /// the `exec` of a plain COMMAND. Its pid: the leader of its own process group.
    pub fn start(
        self,
        cmd: &mut Command,
        var: Option<&str>,
        lent: Option<(String, RawFd)>,
    ) -> std::io::Result<Pid> {
        let setup = match (var, lent) {
            (Some(var), Some((value, fd))) => {
                cmd.env(var, value);
                self.inheriting(fd)
            }
            (Some(var), None) => {
                cmd.env_remove(var);
                self
            }
            (None, _) => self,
        };
        setup.apply(cmd);
        let child = cmd.spawn()?;
        // `cmd` keeps what it was given (a pipe's write end) until the caller drops it.
        Ok(Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX)))
    }

    /// Puts the child in its own process group and arranges, between fork and exec, for it to
    /// die with the spawner and to get the caller's signal mask and SIGCHLD disposition back.
    fn apply(self, cmd: &mut Command) {
        cmd.process_group(0);
        let setup = self;
        // SAFETY: the closure runs in the forked child before exec and calls only
        // async-signal-safe system calls (prctl, getppid, fcntl, sigprocmask, sigaction); it allocates
        // nothing, and its errors are built from raw errno values.
        #[allow(unsafe_code)]
        unsafe {
            cmd.pre_exec(move || setup.in_child());
        }
    }

    fn in_child(&self) -> std::io::Result<()> {
        let errno = |e: nix::errno::Errno| std::io::Error::from_raw_os_error(e as i32);
        #[cfg(target_os = "linux")]
        if self.dies_with_spawner {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(errno)?;
            // The spawner may have died between fork and prctl: then nobody would kill us.
            if nix::unistd::getppid() != self.parent {
                return Err(std::io::Error::from_raw_os_error(nix::libc::ESRCH));
            }
        }
        if let Some(fd) = self.inherits {
            // SAFETY: fcntl(F_SETFD) on a descriptor number changes only its close-on-exec flag;
            // a number that is not open fails with EBADF, reported below.
            #[allow(unsafe_code)]
            if unsafe { nix::libc::fcntl(fd, nix::libc::F_SETFD, 0) } == -1 {
                return Err(std::io::Error::last_os_error());
            }
        }
        nix::sys::signal::sigprocmask(SigmaskHow::SIG_SETMASK, Some(&self.mask), None)
            .map_err(errno)?;
        if self.chld_ignored {
            // SAFETY: SIG_IGN runs no handler code; this is the single-threaded forked child.
            #[allow(unsafe_code)]
            unsafe { nix::sys::signal::signal(Signal::SIGCHLD, SigHandler::SigIgn) }
                .map_err(errno)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_stop_is_once_and_every_later_one_twice() {
        let mut shutdown = Shutdown::default();
        assert_eq!(shutdown.stopped_by(), None);
        assert_eq!(
            shutdown.request(Signal::SIGINT),
            ShutdownRequest::Once(Signal::SIGINT)
        );
        assert_eq!(
            shutdown.request(Signal::SIGTERM),
            ShutdownRequest::Twice(Signal::SIGTERM)
        );
        assert_eq!(
            shutdown.request(Signal::SIGINT),
            ShutdownRequest::Twice(Signal::SIGINT)
        );
        assert_eq!(
            shutdown.stopped_by(),
            Some(Signal::SIGINT),
            "the first one stopped it"
        );
    }
}
