//! The run itself: a device pool handing shards to free devices, one child per shard in its own
//! process group, and one poll loop (signalfd plus deadlines) that reaps children, enforces
//! `--timeout`, and on a stop signal sends SIGTERM to every group, waits `--grace`, then SIGKILLs
//! what is left. A shard's device is free again only once its whole process group is gone.
//!
//! Children are spawned from the main thread only: PR_SET_PDEATHSIG fires when the parent
//! *thread* exits, so a child spawned from a short-lived thread would be killed with it.

use crate::backend::Backend;
use crate::job::{lossy, Job};
use crate::progress::Progress;
use crate::signal::Signals;
use crate::status::{rfc3339, EnvChanges, ShardStatus};
use anyhow::{Context, Result};
use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs::File;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// How often a group whose leader has exited is checked for being empty: its other members are
/// not necessarily our children, so no SIGCHLD says when they are gone.
const GROUP_POLL: Duration = Duration::from_millis(20);

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Per child, from its start; `None`: no limit.
    pub timeout: Option<Duration>,
    /// Between SIGTERM and SIGKILL.
    pub grace: Duration,
}

/// What a finished run reports.
#[derive(Debug)]
pub struct Outcome {
    /// One per shard that started, in shard order.
    pub statuses: Vec<ShardStatus>,
    /// The first stop signal, if one came.
    pub stopped_by: Option<Signal>,
    /// A status file could not be written.
    pub write_failed: bool,
}

#[derive(Debug)]
enum Exit {
    Code(i32),
    Signal(Signal),
}

/// One child that has started and whose group is not gone yet.
#[derive(Debug)]
struct Running {
    job: usize,
    slot: usize,
    /// The child's pid, which is also its process group id.
    pid: Pid,
    started: Instant,
    started_at: String,
    argv: Vec<String>,
    env: EnvChanges,
    deadline: Option<Instant>,
    term_sent: bool,
    kill_at: Option<Instant>,
    killed: bool,
    timed_out: bool,
    interrupted: bool,
    exit: Option<(Exit, Instant)>,
}

impl Running {
    /// SIGTERM to the whole group, SIGKILL after `grace` unless that is already due sooner.
    fn terminate(&mut self, now: Instant, grace: Duration) {
        if !self.term_sent {
            signal_group(self.pid, Signal::SIGTERM);
            self.term_sent = true;
        }
        let at = now + grace;
        self.kill_at = Some(self.kill_at.map_or(at, |k| k.min(at)));
    }

    /// The next moment this child needs attention, if any.
    fn next_event(&self) -> Option<Instant> {
        let deadline = self
            .deadline
            .filter(|_| !self.term_sent && self.exit.is_none());
        let kill = self.kill_at.filter(|_| !self.killed);
        match (deadline, kill) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Runs every job on the device pool; returns when every child and its group is gone.
pub fn supervise(
    jobs: &[Job],
    command: &[OsString],
    backend: &Backend,
    devices: &[String],
    limits: Limits,
    signals: &Signals,
    progress: &mut Progress,
) -> Result<Outcome> {
    let mut free: VecDeque<usize> = (0..devices.len()).collect();
    let mut next = 0;
    let mut running: Vec<Running> = Vec::new();
    let mut statuses: Vec<ShardStatus> = Vec::new();
    let mut stopped_by = None;
    let mut write_failed = false;

    loop {
        if stopped_by.is_none() {
            while next < jobs.len() {
                let Some(slot) = free.pop_front() else { break };
                let job = &jobs[next];
                next += 1;
                match start(job, command, backend, &devices[slot], signals, limits) {
                    Ok(child) => {
                        progress.started(slot, job.shard, child.pid.as_raw().unsigned_abs());
                        // `job` indexes `jobs`, which hold only the shards this run was given.
                        running.push(Running {
                            slot,
                            job: next - 1,
                            ..child
                        });
                    }
                    Err(status) => {
                        write_failed |= !write_status(job, &status, progress);
                        progress.finished(slot, &status);
                        statuses.push(*status);
                        free.push_back(slot);
                    }
                }
            }
        }
        if running.is_empty() && (stopped_by.is_some() || next == jobs.len()) {
            break;
        }

        wait(signals, &running, progress.refresh())?;

        let now = Instant::now();
        for sig in signals.read()? {
            if stopped_by.is_none() {
                stopped_by = Some(sig);
                progress.note(&format!(
                    "got {sig}: stopping {} running shard(s), SIGKILL after {:.1}s (send it again to skip the wait)",
                    running.len(),
                    limits.grace.as_secs_f64()
                ));
                for r in &mut running {
                    r.interrupted = true;
                    r.terminate(now, limits.grace);
                    progress.stopping(r.slot, "interrupted");
                }
            } else {
                progress.note(&format!("got {sig} again: killing every shard now"));
                for r in &mut running {
                    r.interrupted = true;
                    r.terminate(now, Duration::ZERO);
                }
            }
        }

        reap(&mut running)?;

        let now = Instant::now();
        for r in &mut running {
            if r.exit.is_none() && !r.term_sent && r.deadline.is_some_and(|d| d <= now) {
                r.timed_out = true;
                r.terminate(now, limits.grace);
                progress.stopping(r.slot, "timed out");
            }
            if r.exit.is_some() && !r.term_sent && group_alive(r.pid) {
                // The leader is gone but it left processes in its group (a background job, a
                // compiler): they may hold the device, so they go the same way.
                r.terminate(now, limits.grace);
                progress.stopping(r.slot, "exited, leaving processes behind");
            }
            if !r.killed && r.kill_at.is_some_and(|k| k <= now) {
                signal_group(r.pid, Signal::SIGKILL);
                r.killed = true;
            }
        }

        let mut i = 0;
        while i < running.len() {
            if running[i].exit.is_some() && !group_alive(running[i].pid) {
                let r = running.swap_remove(i);
                let job = &jobs[r.job];
                let status = finish(job, &devices[r.slot], r);
                write_failed |= !write_status(job, &status.1, progress);
                progress.finished(status.0, &status.1);
                free.push_back(status.0);
                statuses.push(status.1);
            } else {
                i += 1;
            }
        }
        progress.tick();
    }

    let grace = if stopped_by.is_some() {
        Duration::ZERO
    } else {
        limits.grace
    };
    sweep_orphans(grace);
    statuses.sort_by_key(|s| s.shard);
    Ok(Outcome {
        statuses,
        stopped_by,
        write_failed,
    })
}

/// Starts one job's child; on failure, the status that says why.
fn start(
    job: &Job,
    command: &[OsString],
    backend: &Backend,
    device: &str,
    signals: &Signals,
    limits: Limits,
) -> Result<Running, Box<ShardStatus>> {
    let argv = job.argv(command);
    let env = job.env(backend, device);
    let started = Instant::now();
    let started_at = rfc3339(SystemTime::now());
    let failed = |err: String| {
        Box::new(ShardStatus {
            shard: job.shard,
            device: device.to_owned(),
            pid: None,
            exit_code: None,
            signal: None,
            signal_name: None,
            timed_out: false,
            interrupted: false,
            started_at: started_at.clone(),
            seconds: 0.0,
            argv: lossy(&argv),
            env: env.clone(),
            log: job.log.clone(),
            error: Some(err),
        })
    };
    // Its folder is empty: `run` cleared what an earlier run left in it.
    let log = std::fs::create_dir_all(&job.record_dir)
        .with_context(|| format!("creating {}", job.record_dir.display()))
        .and_then(|()| {
            File::create(&job.log).with_context(|| format!("creating {}", job.log.display()))
        })
        .map_err(|e| failed(format!("{e:#}")))?;
    let err_log = log.try_clone().map_err(|e| failed(e.to_string()))?;

    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err_log);
    for var in &env.unset {
        cmd.env_remove(var);
    }
    for (k, v) in &env.set {
        cmd.env(k, v);
    }
    signals.child_setup().apply(&mut cmd);
    let child = cmd
        .spawn()
        .map_err(|e| failed(format!("running {}: {e}", argv[0].to_string_lossy())))?;
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    Ok(Running {
        job: job.shard,
        slot: 0,
        pid,
        started,
        started_at,
        argv: lossy(&argv),
        env,
        deadline: limits.timeout.map(|t| started + t),
        term_sent: false,
        kill_at: None,
        killed: false,
        timed_out: false,
        interrupted: false,
        exit: None,
    })
}

/// Blocks until a signal arrives or the next deadline (or redraw) is due.
fn wait(signals: &Signals, running: &[Running], refresh: Option<Duration>) -> Result<()> {
    let now = Instant::now();
    let mut timeout: Option<Duration> = refresh;
    let mut bound = |d: Duration| timeout = Some(timeout.map_or(d, |t| t.min(d)));
    for r in running {
        if let Some(at) = r.next_event() {
            bound(at.saturating_duration_since(now));
        }
        if r.exit.is_some() || r.killed {
            bound(GROUP_POLL);
        }
    }
    let timeout = match timeout {
        // Round up: waking a millisecond early would spin until the deadline.
        Some(d) => {
            PollTimeout::try_from(i32::try_from(d.as_micros().div_ceil(1000)).unwrap_or(i32::MAX))
                .unwrap_or(PollTimeout::MAX)
        }
        None => PollTimeout::NONE,
    };
    let mut fds = [PollFd::new(signals.fd(), PollFlags::POLLIN)];
    match nix::poll::poll(&mut fds, timeout) {
        Ok(_) | Err(Errno::EINTR) => Ok(()),
        Err(e) => Err(e).context("waiting for children"),
    }
}

/// Collects every child that has exited, ours or an orphan handed to us as subreaper.
fn reap(running: &mut [Running]) -> Result<()> {
    loop {
        let (pid, exit) = match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, code)) => (pid, Exit::Code(code)),
            Ok(WaitStatus::Signaled(pid, sig, _)) => (pid, Exit::Signal(sig)),
            Ok(WaitStatus::StillAlive) | Err(Errno::ECHILD) => return Ok(()),
            Ok(_) | Err(Errno::EINTR) => continue,
            Err(e) => return Err(e).context("reaping children"),
        };
        if let Some(r) = running.iter_mut().find(|r| r.pid == pid) {
            r.exit = Some((exit, Instant::now()));
        }
    }
}

fn finish(job: &Job, device: &str, r: Running) -> (usize, ShardStatus) {
    let (exit, ended) = r.exit.unwrap_or((Exit::Code(-1), Instant::now()));
    let (exit_code, signal) = match exit {
        Exit::Code(c) => (Some(c), None),
        Exit::Signal(s) => (None, Some(s)),
    };
    (
        r.slot,
        ShardStatus {
            shard: job.shard,
            device: device.to_owned(),
            pid: Some(r.pid.as_raw().unsigned_abs()),
            exit_code,
            signal: signal.map(|s| s as i32),
            signal_name: signal.map(|s| s.as_str().to_owned()),
            timed_out: r.timed_out,
            interrupted: r.interrupted,
            started_at: r.started_at,
            seconds: (ended - r.started).as_secs_f64(),
            argv: r.argv,
            env: r.env,
            log: job.log.clone(),
            error: None,
        },
    )
}

/// Writes status.json; says so and returns false when it cannot.
fn write_status(job: &Job, status: &ShardStatus, progress: &mut Progress) -> bool {
    match protocol::atomic::write_json(&job.status, status) {
        Ok(()) => true,
        Err(e) => {
            progress.note(&format!(
                "shard {}: cannot write its status: {e:#}",
                job.shard
            ));
            false
        }
    }
}

/// Sends `sig` to the process group `pgid`; a group already gone is no error.
fn signal_group(pgid: Pid, sig: Signal) {
    let _ = nix::sys::signal::killpg(pgid, sig);
}

/// Whether any process (a zombie included) is still in group `pgid`. A group we may not signal
/// counts as gone: we could not stop it anyway.
fn group_alive(pgid: Pid) -> bool {
    kill(Pid::from_raw(-pgid.as_raw()), None).is_ok()
}

/// Orphans re-parented to us (we are a subreaper) that left their shard's process group, e.g.
/// by `setsid`: SIGTERM (to their group too, when they lead one), `grace`, SIGKILL, reap.
fn sweep_orphans(grace: Duration) {
    let mut no_running: [Running; 0] = [];
    let _ = reap(&mut no_running);
    let strays = children();
    if strays.is_empty() {
        return;
    }
    for &pid in &strays {
        signal_tree(pid, Signal::SIGTERM);
    }
    let end = Instant::now() + grace;
    loop {
        let _ = reap(&mut no_running);
        let left = children();
        if left.is_empty() {
            return;
        }
        if Instant::now() >= end {
            for pid in left {
                signal_tree(pid, Signal::SIGKILL);
            }
            break;
        }
        std::thread::sleep(GROUP_POLL);
    }
    // SIGKILL cannot be ignored; wait for the kernel to deliver it, bounded in case of D state.
    let end = Instant::now() + Duration::from_secs(5);
    while Instant::now() < end {
        let _ = reap(&mut no_running);
        if children().is_empty() {
            return;
        }
        std::thread::sleep(GROUP_POLL);
    }
}

fn signal_tree(pid: Pid, sig: Signal) {
    if nix::unistd::getpgid(Some(pid)) == Ok(pid) {
        signal_group(pid, sig);
    }
    let _ = kill(pid, sig);
}

/// This process's children, from `/proc/<pid>/stat` (`pid (comm) state ppid ...`).
fn children() -> Vec<Pid> {
    let me = std::process::id().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // comm may hold spaces and parentheses: the fields resume after the last ')'.
            let rest = &stat[stat.rfind(')')? + 1..];
            let ppid = rest.split_whitespace().nth(1)?;
            (ppid == me).then(|| Pid::from_raw(pid))
        })
        .collect()
}
