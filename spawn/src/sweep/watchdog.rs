//! What stops the children when warmup-spawn cannot: a small process forked at the start, in a
//! process group of its own (so no signal to warmup-spawn's group reaches it), that holds the
//! read end of a pipe. warmup-spawn tells it each child's process group as it starts and ends.
//! When the pipe reaches end of file without a last `done`, warmup-spawn died without cleaning
//! up, SIGKILL included: the watchdog SIGKILLs every group it was told of and every process
//! carrying the run's marker (`process`), then exits.
//!
//! Forked before anything else, it shares warmup-spawn's open scratch lock and keeps it until it
//! exits: no next run takes the scratch while the processes it is killing could still write
//! there (docs/CONTRACT.md, "The scratch lock").
//!
//! PR_SET_PDEATHSIG alone reaches only the direct children: their own children, and what left
//! their group, would live on.

use crate::sweep::process::{self, POLL};
use anyhow::{Context, Result};
use nix::sys::signal::Signal;
use nix::unistd::{ForkResult, Pid};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::time::{Duration, Instant};

/// How long the watchdog keeps killing marked processes that turn up (a fork racing the kill).
const KILL_FOR: Duration = Duration::from_secs(10);

/// warmup-spawn's end of the pipe to its watchdog.
#[derive(Debug)]
pub struct Watchdog {
    pid: Pid,
    /// `None` once the watchdog is found gone: warmup-spawn goes on without it.
    pipe: Option<File>,
}

impl Watchdog {
    /// Forks the watchdog for run `run`.
    ///
    /// Call it while this process has a single thread, before any child starts.
    pub fn start(run: &str) -> Result<Watchdog> {
        let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
            .context("making the watchdog's pipe")?;
        // Nothing buffered may be written twice, by both processes.
        let _ = std::io::stdout().flush();
        // SAFETY: warmup-spawn has one thread here (the caller's contract), so the child may run
        // any code, allocation included; it leaves by `_exit`, never returning into the caller.
        #[allow(unsafe_code)]
        match unsafe { nix::unistd::fork() }.context("forking the watchdog")? {
            ForkResult::Parent { child } => Ok(Watchdog {
                pid: child,
                pipe: Some(File::from(write)),
            }),
            ForkResult::Child => {
                drop(write);
                let code = watch(File::from(read), run);
                // SAFETY: _exit ends this forked copy at once, running none of the parent's
                // exit handlers or destructors.
                #[allow(unsafe_code)]
                unsafe {
                    nix::libc::_exit(code)
                }
            }
        }
    }

    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// Tells the watchdog of a child's process group.
    pub fn watch(&mut self, pgid: Pid) {
        self.send(&format!("+{pgid}\n"));
    }

    /// Tells the watchdog that a child's process group is gone.
    pub fn forget(&mut self, pgid: Pid) {
        self.send(&format!("-{pgid}\n"));
    }

    /// Lets the watchdog go: every child was accounted for. Waits for it to exit.
    pub fn finish(mut self) {
        self.send("done\n");
        self.pipe = None;
        // It exits at once on `done`; ECHILD when the run's reaping took it already.
        let _ = nix::sys::wait::waitpid(self.pid, None);
    }

    fn send(&mut self, line: &str) {
        // Lines shorter than PIPE_BUF go through whole. A watchdog gone (EPIPE) leaves the run
        // without its guard against a SIGKILL, not without its children.
        if let Some(pipe) = &mut self.pipe {
            if pipe.write_all(line.as_bytes()).is_err() {
                self.pipe = None;
                eprintln!(
                    "{}: the watchdog (pid {}) is gone; if warmup-spawn is killed now, its children's own children may live on",
                    crate::flags::TOOL,
                    self.pid
                );
            }
        }
    }
}

/// The watchdog's life: collects the groups until end of file; kills everything unless `done`
/// came first. Returns its exit status.
fn watch(pipe: File, run: &str) -> i32 {
    // Out of warmup-spawn's group: a Ctrl-C or `kill -- -PGID` for warmup-spawn is not for us.
    let _ = nix::unistd::setpgid(Pid::from_raw(0), Pid::from_raw(0));
    let mut groups: Vec<Pid> = Vec::new();
    for line in BufReader::new(pipe).lines() {
        let Ok(line) = line else { break };
        if line == "done" {
            return 0;
        }
        let pgid = |s: &str| s.parse::<i32>().ok().map(Pid::from_raw);
        if let Some(pgid) = line.strip_prefix('+').and_then(pgid) {
            groups.push(pgid);
        } else if let Some(pgid) = line.strip_prefix('-').and_then(pgid) {
            groups.retain(|&g| g != pgid);
        }
    }
    for &pgid in &groups {
        process::signal_group(pgid, Signal::SIGKILL);
    }
    let mut killed = std::collections::HashSet::new();
    let end = Instant::now() + KILL_FOR;
    while Instant::now() < end {
        let marked: Vec<Pid> = process::census(run).into_values().flatten().collect();
        if marked.is_empty() {
            break;
        }
        killed.extend(marked.iter().copied());
        process::signal_each(&marked, Signal::SIGKILL, None);
        std::thread::sleep(POLL);
    }
    if !groups.is_empty() || !killed.is_empty() {
        eprintln!(
            "{}: watchdog: warmup-spawn died without stopping its children; killed {} process group(s) and {} other process(es) of theirs",
            crate::flags::TOOL,
            groups.len(),
            killed.len()
        );
    }
    1
}
