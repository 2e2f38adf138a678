//! The run itself: a device pool handing shards to free devices, one child per shard in its own
//! process group, and one poll loop (signalfd, the children's output pipes, deadlines) that
//! copies their logs, reaps them, enforces `--timeout`, and on a stop signal sends SIGTERM to
//! every child, waits `--grace`, then SIGKILLs what is left. A shard's device is free again only
//! once nothing of its child is left (`child`).
//!
//! Children are spawned from the main thread only: PR_SET_PDEATHSIG fires when the parent
//! *thread* exits, so a child spawned from a short-lived thread would be killed with it.

use crate::measure::measurement::Measurement;
use crate::signal::{Shutdown, ShutdownRequest, Signals};
use crate::sweep::child::{Child, Stop};
use crate::sweep::job::Job;
use crate::sweep::log::Log;
use crate::sweep::process::{self, POLL};
use crate::sweep::progress::Progress;
use crate::sweep::status::rfc3339;
use crate::sweep::watchdog::Watchdog;
use anyhow::{Context, Result};
use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout};
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use protocol::status::ShardStatus;
use std::collections::{HashMap, VecDeque};
use std::os::fd::OwnedFd;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Per child, from its start; `None`: no limit.
    pub timeout: Option<Duration>,
    /// Between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// Bytes of output a child's log keeps; `None`: all.
    pub max_log: Option<u64>,
}

/// How a supervised run ended (each shard's own outcome is its status's:
/// `protocol::status::Outcome`).
#[derive(Debug)]
pub struct RunEnd {
    /// One per shard that started, in shard order.
    pub statuses: Vec<ShardStatus>,
    /// The first stop signal, if one came.
    pub stopped_by: Option<Signal>,
    /// A status file could not be written.
    pub write_failed: bool,
}

/// What the loop needs besides the jobs: where children run and what watches them.
#[derive(Debug)]
pub struct Run<'a> {
    pub devices: &'a [String],
    pub limits: Limits,
    pub signals: &'a Signals,
    /// The run's stop signals, which the measurement's supervision goes on counting after.
    pub shutdown: &'a mut Shutdown,
    /// The measurement started with the sweep (`--measure`): one more job, stopped by the same
    /// rule, which lives on when the sweep is over.
    pub measurement: Option<&'a mut Measurement>,
    pub watchdog: &'a mut Watchdog,
    pub progress: &'a mut Progress,
    /// The run's name, in every child's marker (`process`).
    pub run_id: &'a str,
}

/// Runs every job on the device pool; returns when nothing of any child is left.
pub fn supervise(jobs: &[Job], run: Run<'_>) -> Result<RunEnd> {
    let mut pool = Pool {
        jobs,
        run,
        free: VecDeque::new(),
        next: 0,
        running: Vec::new(),
        statuses: Vec::new(),
        write_failed: false,
    };
    pool.free = (0..pool.run.devices.len()).collect();
    loop {
        if pool.run.shutdown.stopped_by().is_none() {
            pool.start_ready();
        }
        let all_started = pool.next == jobs.len();
        if pool.running.is_empty() && (pool.run.shutdown.stopped_by().is_some() || all_started) {
            break;
        }
        let stop_signals = pool.wait_and_reap()?;
        // One look at /proc per pass serves every child, and only when one needs it.
        let mut census = Census {
            run_id: pool.run.run_id,
            jobs,
            pids: None,
        };
        pool.stop(stop_signals, &mut census);
        pool.tick(&mut census);
        pool.run.progress.tick();
    }
    Ok(pool.end())
}

/// The pool while it runs: the free devices (slots), the next job to start, the children running
/// and the statuses of those that ended.
struct Pool<'j, 'r> {
    jobs: &'j [Job],
    run: Run<'r>,
    free: VecDeque<usize>,
    next: usize,
    running: Vec<Child>,
    statuses: Vec<ShardStatus>,
    write_failed: bool,
}

/// The processes that carry each shard's marker, looked up once a pass and only when asked.
struct Census<'a> {
    run_id: &'a str,
    jobs: &'a [Job],
    pids: Option<HashMap<usize, Vec<Pid>>>,
}

impl Census<'_> {
    /// The marked processes of job `job`'s shard.
    fn marked(&mut self, job: usize) -> Vec<Pid> {
        self.pids
            .get_or_insert_with(|| process::census(self.run_id))
            .get(&self.jobs[job].shard)
            .cloned()
            .unwrap_or_default()
    }
}

impl Pool<'_, '_> {
    /// Starts the next jobs on the free devices.
    fn start_ready(&mut self) {
        let Run {
            devices,
            limits,
            signals,
            ..
        } = self.run;
        while self.next < self.jobs.len() {
            let Some(slot) = self.free.pop_front() else {
                break;
            };
            let job = &self.jobs[self.next];
            match start(job, self.next, slot, &devices[slot], signals, limits) {
                Ok(child) => {
                    self.run.watchdog.watch(child.pid);
                    let pid = child.pid.as_raw().unsigned_abs();
                    self.run.progress.started(slot, job, pid);
                    self.running.push(child);
                }
                Err(status) => {
                    self.write_failed |= !write_status(job, &status, self.run.progress);
                    self.run.progress.finished(slot, &status);
                    self.statuses.push(*status);
                    self.free.push_back(slot);
                }
            }
            self.next += 1;
        }
    }

    /// Waits for the next event, copies the logs, reaps what exited; the stop signals that came.
    fn wait_and_reap(&mut self) -> Result<Vec<Signal>> {
        let signals = self.run.signals;
        wait(
            signals,
            &self.running,
            self.run.measurement.as_deref(),
            self.run.progress.refresh(),
        )?;
        // The signals are read, which drains every pending SIGCHLD, before the children are
        // reaped: read after, a child that exits between the two would have its SIGCHLD drained
        // unseen and stay a zombie, with nothing left to wake the next wait (seen once: a sweep
        // sat 11 minutes in poll with no deadline to wake it).
        let stop_signals = signals.read()?;
        for child in &mut self.running {
            child.log.pump();
        }
        for (pid, exit) in process::reap().context("reaping children")? {
            if let Some(child) = self.running.iter_mut().find(|c| c.pid == pid) {
                child.exited(exit);
            } else if let Some(m) = self.run.measurement.as_deref_mut().filter(|m| m.pid == pid) {
                m.exited(exit);
            }
        }
        Ok(stop_signals)
    }

    /// Each stop signal: the running children stopped (SIGTERM, SIGKILL after the grace; at
    /// once on a second one), the measurement told.
    fn stop(&mut self, stop_signals: Vec<Signal>, census: &mut Census<'_>) {
        let limits = self.run.limits;
        let now = Instant::now();
        for sig in stop_signals {
            let request = self.run.shutdown.request(sig);
            let grace = match request {
                ShutdownRequest::Once(_) => {
                    self.run.progress.note(&format!(
                        "got {sig}: stopping {} running shard(s), SIGKILL after {:.1}s (send it again to skip the wait)",
                        self.running.len(),
                        limits.grace.as_secs_f64()
                    ));
                    limits.grace
                }
                ShutdownRequest::Twice(_) => {
                    self.run
                        .progress
                        .note(&format!("got {sig} again: killing every shard now"));
                    Duration::ZERO
                }
            };
            if let Some(m) = self.run.measurement.as_deref_mut() {
                m.stop(request, now, limits.grace);
            }
            for child in &mut self.running {
                let marked = census.marked(child.job);
                if child.stop(Stop::Interrupted, now, grace, &marked) {
                    self.run
                        .progress
                        .stopping(child.slot, Stop::Interrupted.words());
                }
            }
        }
    }

    /// The deadlines: timeouts and kills due; a child that is gone gives its device back.
    fn tick(&mut self, census: &mut Census<'_>) {
        let now = Instant::now();
        if let Some(m) = self.run.measurement.as_deref_mut() {
            m.tick(now);
        }
        let grace = self.run.limits.grace;
        let mut i = 0;
        while i < self.running.len() {
            let child = &mut self.running[i];
            let marked = if child.lingers() {
                census.marked(child.job)
            } else {
                Vec::new()
            };
            if let Some(why) = child.tick(now, grace, &marked) {
                self.run.progress.stopping(child.slot, why.words());
            }
            if child.gone(&marked) {
                let child = self.running.swap_remove(i);
                self.run.watchdog.forget(child.pid);
                let (job, slot, status) = child.finish();
                self.write_failed |= !write_status(&self.jobs[job], &status, self.run.progress);
                self.run.progress.finished(slot, &status);
                self.free.push_back(slot);
                self.statuses.push(status);
            } else {
                i += 1;
            }
        }
    }

    /// Once no child is left: the orphans they left swept, the statuses in shard order.
    fn end(mut self) -> RunEnd {
        let stopped_by = self.run.shutdown.stopped_by();
        let grace = if stopped_by.is_some() {
            Duration::ZERO
        } else {
            self.run.limits.grace
        };
        let mut keep = vec![self.run.watchdog.pid()];
        keep.extend(self.run.measurement.as_deref().map(|m| m.pid));
        for (pid, exit) in process::sweep_orphans(grace, &keep) {
            if let Some(m) = self.run.measurement.as_deref_mut().filter(|m| m.pid == pid) {
                m.exited(exit);
            }
        }
        self.statuses.sort_by_key(|s| s.shard);
        RunEnd {
            statuses: self.statuses,
            stopped_by,
            write_failed: self.write_failed,
        }
    }
}

/// Starts job `index`'s child on `device`; on failure, the status that says why.
fn start(
    job: &Job,
    index: usize,
    slot: usize,
    device: &str,
    signals: &Signals,
    limits: Limits,
) -> Result<Child, Box<ShardStatus>> {
    let started = Instant::now();
    let env = job.env_on(device);
    let mut status = crate::sweep::status::starting(job, device, env, rfc3339(SystemTime::now()));
    // Its folder is empty: `run` cleared what an earlier run left in it.
    let opened = std::fs::create_dir_all(&job.record_dir)
        .with_context(|| format!("creating {}", job.record_dir.display()))
        .and_then(|()| Log::create(&job.log, limits.max_log));
    let (log, output) = match opened {
        Ok(pair) => pair,
        Err(e) => {
            status.error = Some(format!("{e:#}"));
            return Err(Box::new(status));
        }
    };
    match spawn(job, &status, output, signals) {
        Ok(pid) => Ok(Child::new(
            index,
            slot,
            pid,
            log,
            status,
            started,
            limits.timeout,
        )),
        Err(e) => {
            status.error = Some(e);
            Err(Box::new(status))
        }
    }
}

/// Forks and execs the child with `status`'s environment, its stdout and stderr on `output`.
fn spawn(
    job: &Job,
    status: &ShardStatus,
    output: OwnedFd,
    signals: &Signals,
) -> Result<Pid, String> {
    let err_output = output
        .try_clone()
        .map_err(|e| format!("duplicating the output pipe: {e}"))?;
    let mut cmd = Command::new(&job.argv[0]);
    cmd.args(&job.argv[1..])
        .stdin(Stdio::null())
        .stdout(output)
        .stderr(err_output);
    status.env.apply(&mut cmd);
    let pid = signals
        .child_setup()
        .start(&mut cmd, None, None)
        .map_err(|e| format!("running {}: {e}", job.argv[0].to_string_lossy()))?;
    // `cmd` goes here with our copies of the pipe's write end: the log sees end of file when
    // the child's processes are done with it, not when we are.
    Ok(pid)
}

/// Blocks until a signal or output arrives, or the next deadline (or redraw) is due.
fn wait(
    signals: &Signals,
    running: &[Child],
    measurement: Option<&Measurement>,
    refresh: Option<Duration>,
) -> Result<()> {
    let now = Instant::now();
    let mut timeout: Option<Duration> = refresh;
    let mut bound = |d: Duration| timeout = Some(timeout.map_or(d, |t| t.min(d)));
    for child in running {
        if let Some(at) = child.next_event() {
            bound(at.saturating_duration_since(now));
        }
        if child.lingers() {
            bound(POLL);
        }
    }
    if let Some(m) = measurement {
        if let Some(at) = m.next_event() {
            bound(at.saturating_duration_since(now));
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
    let mut fds = vec![PollFd::new(signals.fd(), PollFlags::POLLIN)];
    fds.extend(
        running
            .iter()
            .filter_map(|c| c.log.fd())
            .map(|fd| PollFd::new(fd, PollFlags::POLLIN)),
    );
    match nix::poll::poll(&mut fds, timeout) {
        Ok(_) | Err(Errno::EINTR) => Ok(()),
        Err(e) => Err(e).context("waiting for children"),
    }
}

/// Writes status.json; says so and returns false when it cannot.
fn write_status(job: &Job, status: &ShardStatus, progress: &mut Progress) -> bool {
    match status.write(&job.status) {
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
