//! `--measure`: the whole run after the plan, in one supervised process. The measurement starts
//! with the sweep behind its gate where it can wait there (`measurement`), the sweep runs
//! (`supervisor`), warmup-merge and warmup-publish run (`tools`), the gate is told what they gave
//! (`gate::verdict`), and the measurement runs to its end; a measurement that cannot wait at a
//! gate, or ran no test, runs after publishing. Every stop signal, whenever it comes, is one
//! [`ShutdownRequest`] for every job: the children, a tool, the measurement.
//!
//! Once the measurement has started, nothing fails the run with an error: what goes wrong is a
//! line and the fallback to live tuning, as the measurement must still be seen to its end.

use crate::gate::{self, Gate, Merged, Word};
use crate::measurement::{Measurement, Start, Told};
use crate::process::{self, Exit, POLL};
use crate::progress::Progress;
use crate::signal::{Shutdown, ShutdownRequest, Signals};
use crate::{status, tools, watchdog, Args, PreparedRun};
use anyhow::{Context, Result};
use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout};
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use protocol::env;
use protocol::status::{EnvChanges, Outcome};
use protocol::summary::Summary;
use std::ffi::OsStr;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use toolkit::Status;

/// What the run says, as scripts/warmup said it.
const TAG: &str = "[parallel-warmup]";

fn say(line: &str) {
    eprintln!("{TAG} {line}");
}

/// The environment variables that reach the sweep's children only, never the measurement.
const SWEEP_ONLY: [&str; 3] = [protocol::lock::LOCK_FD, env::RESUME_DIR, env::FRESH];

/// Where the configs go: `--record-dir`, else the record variable as every tool reads it
/// (`protocol::env::record_dir_of`: trimmed, blank is unset).
pub fn record_dir(args: &Args) -> Option<PathBuf> {
    args.record_dir
        .clone()
        .or_else(|| env::record_dir_of(std::env::var_os(env::RECORD_DIR).as_deref()))
}

/// Everything after the sweep waits here: for a tool, or for the measurement, reading the
/// stop signals meanwhile.
struct Rest<'a> {
    signals: &'a Signals,
    shutdown: &'a mut Shutdown,
    grace: Duration,
    measurement: Option<Measurement>,
}

impl Rest<'_> {
    /// Waits until `tool` ends (its exit) or, with none, until the measurement is gone. A stop
    /// lets a tool finish (they write atomically, and what they write is the resume's), a
    /// second one kills it; the measurement gets each as [`Measurement::stop`] says.
    fn wait(&mut self, tool: Option<Pid>) -> Result<Option<Exit>> {
        let mut tool_exit = None;
        loop {
            for (pid, exit) in process::reap().context("reaping children")? {
                if Some(pid) == tool {
                    tool_exit = Some(exit);
                } else if let Some(m) = self.measurement.as_mut().filter(|m| m.pid == pid) {
                    m.exited(exit);
                }
            }
            let done = match tool {
                Some(_) => tool_exit.is_some(),
                None => self.measurement.as_ref().is_none_or(Measurement::gone),
            };
            if done {
                return Ok(tool_exit);
            }
            self.block()?;
            let now = Instant::now();
            for sig in self.signals.read()? {
                let request = self.shutdown.request(sig);
                match request {
                    ShutdownRequest::Once(_) => say(&format!(
                        "got {sig}: stopping; SIGKILL after {:.1}s (send it again to skip the wait)",
                        self.grace.as_secs_f64()
                    )),
                    ShutdownRequest::Twice(_) => {
                        say(&format!("got {sig} again: killing everything now"));
                        if let Some(pid) = tool {
                            process::signal_group(pid, Signal::SIGKILL);
                        }
                    }
                }
                if let Some(m) = &mut self.measurement {
                    m.stop(request, now, self.grace);
                }
            }
            if let Some(m) = &mut self.measurement {
                m.tick(now);
            }
        }
    }

    /// Blocks until a signal (SIGCHLD included) or the measurement's next deadline.
    fn block(&self) -> Result<()> {
        let mut timeout = None;
        if let Some(m) = &self.measurement {
            timeout = m
                .next_event()
                .map(|at| at.saturating_duration_since(Instant::now()));
            if m.lingers() {
                timeout = Some(timeout.map_or(POLL, |t: Duration| t.min(POLL)));
            }
        }
        let timeout = match timeout {
            Some(d) => PollTimeout::try_from(
                i32::try_from(d.as_micros().div_ceil(1000)).unwrap_or(i32::MAX),
            )
            .unwrap_or(PollTimeout::MAX),
            None => PollTimeout::NONE,
        };
        let mut fds = [PollFd::new(self.signals.fd(), PollFlags::POLLIN)];
        match nix::poll::poll(&mut fds, timeout) {
            Ok(_) | Err(Errno::EINTR) => Ok(()),
            Err(e) => Err(e).context("waiting for the measurement"),
        }
    }

    /// Runs tool `name` with `args` to its end under the lent lock; its stdout when it exits 0,
    /// else its exit status (`Err`), a line saying why where it could not run at all.
    fn tool(&mut self, name: &str, args: &[&OsStr], lock: Option<&File>) -> ToolEnd {
        let started = tools::find(name)
            .and_then(|program| tools::start(&program, args, lock, self.signals.child_setup()));
        let started = match started {
            Ok(started) => started,
            Err(e) => {
                eprintln!("{}: {e:#}", crate::TOOL);
                return ToolEnd::Failed(None);
            }
        };
        match self.wait(Some(started.pid)) {
            Ok(Some(Exit::Code(0))) => ToolEnd::Done(started.output()),
            Ok(Some(Exit::Code(code))) => ToolEnd::Failed(Some((code, started.output()))),
            Ok(_) => ToolEnd::Failed(None),
            Err(e) => {
                eprintln!("{}: {e:#}", crate::TOOL);
                ToolEnd::Failed(None)
            }
        }
    }

    fn stopped(&self) -> Option<Signal> {
        self.shutdown.stopped_by()
    }
}

/// How a tool ended: its stdout, or its exit code and stdout (`None`: it did not run, or a
/// signal ended it).
enum ToolEnd {
    Done(Vec<u8>),
    Failed(Option<(i32, Vec<u8>)>),
}

/// What the run's summary adds to the sweep's (docs/CONTRACT.md, "Run summaries").
#[derive(Debug, Default)]
struct Report {
    /// The scratch, for `--discard-scratch`.
    scratch: Option<PathBuf>,
    /// Something in the scratch is needed still: its logs, its configs.
    keep: bool,
    merge: Option<std::collections::HashMap<String, String>>,
    published: Option<PathBuf>,
    told: Option<Told>,
    start: Option<Start>,
    status: Option<u8>,
}

/// The `--measure` run, from the hold on the scratch to the measurement's end.
pub fn run(args: &Args, prepared: &PreparedRun, parent: Pid) -> Result<Status> {
    let (scratch, jobs) = (&prepared.scratch, &prepared.jobs);
    let _hold = crate::hold_scratch(prepared)?;
    // A lock the caller lent reaches the tools, not the measurement nor the children.
    if let Some(fd) = std::env::var(protocol::lock::LOCK_FD)
        .ok()
        .and_then(|v| v.trim().parse::<i32>().ok())
        .filter(|fd| *fd > 2)
    {
        // SAFETY: F_SETFD sets only the close-on-exec flag of our own descriptor; a number
        // that is not open fails (EBADF) and is left alone.
        #[allow(unsafe_code)]
        unsafe {
            nix::libc::fcntl(fd, nix::libc::F_SETFD, nix::libc::FD_CLOEXEC);
        }
    }
    let lock = File::open(scratch.lock_file()).ok();
    let record_dir = record_dir(args)
        .map(|d| std::path::absolute(&d).unwrap_or(d))
        .filter(|d| !d.as_os_str().is_empty());
    let publish_dir = record_dir
        .clone()
        .unwrap_or_else(|| scratch.root().join("merged"));

    // The watchdog first, while this is the only thread and before the gate exists (a fork
    // would hold its write end); then the signals, before any job starts.
    let mut watchdog = watchdog::Watchdog::start(&prepared.run_id)?;
    let signals = Signals::install(parent)?;
    let mut shutdown = Shutdown::default();
    let mut report = Report {
        scratch: Some(scratch.root().to_path_buf()),
        ..Report::default()
    };

    let addopts = std::env::var_os("PYTEST_ADDOPTS");
    let mut measurement = match protocol::command::measure_command(
        &args.command,
        addopts.as_deref(),
    ) {
        None => {
            say("the measurement starts after the sweep: COMMAND is not a pytest command that loads warmup_harness");
            None
        }
        Some(argv) => {
            let set = vec![(env::REPLAY_DIR.to_owned(), path_text(&publish_dir))];
            let changes = EnvChanges {
                set,
                unset: SWEEP_ONLY.map(str::to_owned).into(),
            };
            match Gate::new().and_then(|gate| {
                Measurement::start(
                    &argv,
                    &changes,
                    Some(gate),
                    Start::Early,
                    signals.child_setup(),
                )
            }) {
                Ok(m) => {
                    say(&format!(
                        "the measurement (pid {}) starts alongside the sweep; it runs no test before the configs are published",
                        m.pid
                    ));
                    Some(m)
                }
                Err(e) => {
                    say(&format!(
                        "cannot start the measurement alongside the sweep ({e:#}); it starts after the sweep"
                    ));
                    None
                }
            }
        }
    };

    let mut progress = Progress::new(&prepared.devices);
    let t0 = Instant::now();
    let swept = crate::sweep(
        args,
        prepared,
        &signals,
        &mut shutdown,
        measurement.as_mut(),
        &mut watchdog,
        &mut progress,
    );
    watchdog.finish();
    let wall = t0.elapsed();
    let statuses = match swept {
        Ok(outcome) => outcome.statuses,
        Err(e) => {
            say(&format!(
                "the sweep could not run ({e:#}); falling back to the normal serial autotune (scratch kept in {})",
                scratch.root().display()
            ));
            Vec::new()
        }
    };
    progress.summary(&statuses, jobs.len(), wall);
    let sweep = status::summary(&prepared.plan.op, jobs, &statuses, wall)?;

    let mut rest = Rest {
        signals: &signals,
        shutdown: &mut shutdown,
        grace: args.grace,
        measurement,
    };
    let scratch_arg = scratch.root().as_os_str();

    if rest.stopped().is_some() {
        // A stopped sweep's records are published for the next run to resume from.
        if let Some(dir) = &record_dir {
            let merged = matches!(
                rest.tool(
                    "warmup-merge",
                    &[OsStr::new("--in-scratch"), scratch_arg],
                    lock.as_ref()
                ),
                ToolEnd::Done(_)
            );
            let published = merged
                && matches!(
                    rest.tool(
                        "warmup-publish",
                        &publish_args(dir, scratch_arg),
                        lock.as_ref()
                    ),
                    ToolEnd::Done(_)
                );
            if published {
                say(&format!(
                    "the sweep was stopped: what its children recorded is published in {}; the next run resumes from it (--fresh: tunes every key again)",
                    dir.display()
                ));
                report.published = Some(dir.clone());
            } else {
                say(
                    "the sweep was stopped before any child recorded a key; nothing to resume from",
                );
            }
        }
        return finish_stopped(args, rest, &sweep, report);
    }

    // Merge, publish, and the costs the next run splits by.
    let ok = statuses
        .iter()
        .filter(|s| s.outcome() == Outcome::Ok)
        .count();
    let failed: Vec<(usize, PathBuf)> = jobs
        .iter()
        .filter(|job| {
            let status = statuses.iter().find(|s| s.shard == job.shard);
            matches!(Outcome::of(status), Outcome::Failed | Outcome::TimedOut)
        })
        .map(|job| (job.shard, job.log.clone()))
        .collect();
    let merged = match rest.tool(
        "warmup-merge",
        &[
            OsStr::new("--in-scratch"),
            scratch_arg,
            OsStr::new("--summary"),
            OsStr::new("-"),
        ],
        lock.as_ref(),
    ) {
        ToolEnd::Done(out) => {
            let read = protocol::summary::read(&out);
            report.merge.clone_from(&read);
            match read {
                Some(s) => Merged::Configs {
                    kernels: s.get("kernels").cloned().unwrap_or_default(),
                    configs: s.get("configs").cloned().unwrap_or_default(),
                    conflicts: s.get("conflicts").and_then(|c| c.parse().ok()).unwrap_or(0),
                    conflicts_file: s.get("conflicts_file").map(PathBuf::from),
                },
                None => Merged::Failed,
            }
        }
        ToolEnd::Failed(Some((3, out))) => {
            let read = protocol::summary::read(&out);
            report.merge.clone_from(&read);
            Merged::Nothing {
                recovered: read.and_then(|s| s.get("recovered")?.parse().ok()),
            }
        }
        ToolEnd::Failed(_) => Merged::Failed,
    };
    let mut published = None;
    if matches!(merged, Merged::Configs { .. }) && rest.stopped().is_none() {
        let dir = record_dir
            .clone()
            .unwrap_or_else(|| scratch.root().join("merged"));
        let mut args_ = publish_args(&dir, scratch_arg);
        // Nothing missing: every shard ran to its end, ok (docs/CONTRACT.md, "complete_for").
        let complete = statuses.len() == jobs.len() && ok == jobs.len();
        if let (Some(sig), true) = (&args.signature, complete) {
            args_.splice(0..0, [OsStr::new("--signature"), OsStr::new(sig.as_str())]);
        }
        if let ToolEnd::Done(out) = rest.tool("warmup-publish", &args_, lock.as_ref()) {
            published = replay_dir(&out);
        }
    }
    report.published.clone_from(&published);
    if rest.stopped().is_some() {
        return finish_stopped(args, rest, &sweep, report);
    }
    if let (Some(dir), Some(to)) = (&record_dir, &published) {
        if dir == to && !prepared.plan.by_key() {
            keep_costs(
                &mut rest,
                &prepared.plan.op,
                dir,
                scratch_arg,
                lock.as_ref(),
            );
        }
    }

    let verdict = gate::verdict(&gate::Findings {
        op: &prepared.plan.op,
        scratch: scratch.root(),
        shards: jobs.len(),
        ok,
        failed,
        wall_seconds: wall.as_secs_f64(),
        summed_seconds: statuses.iter().map(|s| s.seconds).sum(),
        merged,
        published: published.clone(),
        publish_dir: rest.measurement.as_ref().map(|_| publish_dir.as_path()),
    });
    for line in &verdict.lines {
        say(line);
    }
    let conflicted =
        matches!(&report.merge, Some(m) if m.get("conflicts").is_some_and(|c| c != "0"));
    report.keep = verdict.word != Some(Word::Replay)
        || published.as_deref() == Some(scratch.root().join("merged").as_path())
        || conflicted
        || statuses.iter().any(|s| s.outcome() != Outcome::Ok)
        || statuses.len() < jobs.len();

    // The hand-over: the gate opened, or COMMAND run after the sweep.
    let word = verdict.word.unwrap_or(Word::Replay);
    let mut start = Start::Late;
    if let Some(m) = &mut rest.measurement {
        let opened = match verdict.word {
            Some(word) => m.open(word),
            None => {
                m.close();
                false
            }
        };
        rest.wait(None)?;
        let stopped = rest.stopped().is_some();
        let m = rest
            .measurement
            .as_mut()
            .context("the measurement went missing")?;
        report.told = Some(m.state().told());
        let unread = opened && m.unread();
        let again = if verdict.word.is_some() {
            m.state().runs_again(unread)
        } else {
            !stopped
        };
        if !again {
            report.start = Some(Start::Early);
            report.status = m.state().status();
            return finish(args, rest, &sweep, report);
        }
        if verdict.word.is_some() {
            say(&format!(
                "the measurement ended (exit {}) before its gate opened, so it ran no test: see its output above (is warmup-harness installed where its pytest runs?); running COMMAND again, after the sweep",
                m.state().status().map_or_else(|| "?".to_owned(), |s| s.to_string())
            ));
        }
        start = Start::Again;
    }
    let changes = match (word, &published) {
        (Word::Replay, Some(dir)) => EnvChanges {
            set: vec![(env::REPLAY_DIR.to_owned(), path_text(dir))],
            unset: [env::RECORD_DIR, env::GATE]
                .into_iter()
                .chain(SWEEP_ONLY)
                .map(str::to_owned)
                .collect(),
        },
        _ => EnvChanges {
            set: Vec::new(),
            unset: [env::GATE]
                .into_iter()
                .chain(SWEEP_ONLY)
                .map(str::to_owned)
                .collect(),
        },
    };
    match Measurement::start(&args.command, &changes, None, start, signals.child_setup()) {
        Ok(m) => rest.measurement = Some(m),
        Err(e) => {
            eprintln!("{}: {e:#}", crate::TOOL);
            report.start = Some(start);
            report.status = Some(127);
            return finish(args, rest, &sweep, report);
        }
    }
    report.told = Some(Told::NoGate);
    rest.wait(None)?;
    report.start = Some(start);
    report.status = rest.measurement.as_ref().and_then(|m| m.state().status());
    finish(args, rest, &sweep, report)
}

/// `warmup-publish --format json --record-dir DIR SCRATCH`.
fn publish_args<'a>(dir: &'a Path, scratch: &'a OsStr) -> Vec<&'a OsStr> {
    vec![
        OsStr::new("--format"),
        OsStr::new("json"),
        OsStr::new("--record-dir"),
        dir.as_os_str(),
        OsStr::new("--"),
        scratch,
    ]
}

/// The replay folder in warmup-publish's `--format json` output.
fn replay_dir(out: &[u8]) -> Option<PathBuf> {
    let value: serde_json::Value = serde_json::from_slice(out).ok()?;
    value["set"][env::REPLAY_DIR].as_str().map(PathBuf::from)
}

/// `warmup-costs --op OP --record-dir DIR SCRATCH`: the sweep's costs kept with the records for
/// the next run's split and prediction; its exit 3 is silent, any other failure a warning, and
/// neither stops the measurement.
fn keep_costs(rest: &mut Rest<'_>, op: &str, dir: &Path, scratch: &OsStr, lock: Option<&File>) {
    let args = [
        OsStr::new("--op"),
        OsStr::new(op),
        OsStr::new("--record-dir"),
        dir.as_os_str(),
        OsStr::new("--"),
        scratch,
    ];
    match rest.tool("warmup-costs", &args, lock) {
        ToolEnd::Done(_) | ToolEnd::Failed(Some((3, _))) => {}
        ToolEnd::Failed(_) => say(&format!(
            "WARNING the sweep's costs could not be kept in {} (see above); the next run splits by the cost model",
            dir.display()
        )),
    }
}

/// COMMAND run as the caller would have run it, replacing this process (its status is then the
/// run's), after saying why there is no warmup; 127 when it cannot be run.
pub fn plain(args: &Args, why: &str) -> Status {
    use std::os::unix::process::CommandExt;
    say(&format!(
        "{why}; falling back to the normal serial autotune"
    ));
    let mut cmd = std::process::Command::new(&args.command[0]);
    cmd.args(&args.command[1..]);
    for var in SWEEP_ONLY {
        cmd.env_remove(var);
    }
    let e = cmd.exec();
    eprintln!(
        "{}: running {}: {e}",
        crate::TOOL,
        args.command[0].to_string_lossy()
    );
    Status::Passed(127)
}

fn path_text(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// A stopped run: the measurement, stopped with everything else, waited for; exit 128+N.
fn finish_stopped(
    args: &Args,
    mut rest: Rest<'_>,
    sweep: &Summary,
    mut report: Report,
) -> Result<Status> {
    rest.wait(None)?;
    if let Some(m) = &rest.measurement {
        report.told = Some(m.state().told());
        report.start = Some(m.start);
        report.status = m.state().status();
    }
    say("stopped by a signal; every child was stopped, the measurement does not run");
    finish(args, rest, sweep, report)
}

/// Writes the run summary; the run's status: 128+N when a signal stopped it, else the
/// measurement's.
fn finish(args: &Args, rest: Rest<'_>, sweep: &Summary, report: Report) -> Result<Status> {
    let stopped = rest.stopped();
    if stopped.is_some() && matches!(report.told, Some(Told::Word(_) | Told::NoGate)) {
        say(&format!(
            "stopped by a signal: the measurement was stopped{}",
            report
                .status
                .map_or_else(String::new, |s| format!(" (exit {s})"))
        ));
    }
    let keep = report.keep || stopped.is_some();
    if args.discard_scratch {
        match (&report.scratch, keep) {
            (Some(root), false) => {
                if let Err(e) = std::fs::remove_dir_all(root) {
                    say(&format!(
                        "cannot remove the scratch {} ({e}); remove it by hand",
                        root.display()
                    ));
                }
            }
            (Some(root), true) => say(&format!("scratch kept in {}", root.display())),
            (None, _) => {}
        }
    }

    if let Some(target) = &args.summary {
        let mut summary = sweep.clone();
        if let Some(merge) = &report.merge {
            for name in ["inputs", "recovered", "kernels", "configs", "conflicts"] {
                if let Some(v) = merge.get(name) {
                    summary.value(name, v);
                }
            }
            if let Some(file) = merge.get("conflicts_file") {
                summary.path("conflicts_file", &[], Path::new(file))?;
            }
        }
        if let Some(dir) = &report.published {
            summary.path("published", &[], dir)?;
        }
        let told = match report.told {
            None => "none",
            Some(Told::Nothing | Told::Closed) => "closed",
            Some(Told::Word(word)) => word.line(),
            Some(Told::NoGate) => "none",
        };
        summary.value("gate", told);
        summary.value("measurement", report.start.map_or("none", Start::word));
        if let Some(status) = report.status {
            summary.value("measurement_status", status);
        }
        if let Some(sig) = stopped {
            summary.value("stop_signal", sig as i32);
        }
        summary
            .write(target)
            .with_context(|| format!("writing the run summary to {}", target.display()))?;
    }
    Ok(match (stopped, report.status) {
        (Some(sig), _) => Status::Signalled(sig as i32),
        (None, Some(code)) => Status::Passed(code),
        (None, None) => Status::Passed(127),
    })
}
