//! `--measure`: the whole run after the plan, in one supervised process, as phases that hand
//! each other typed values (nextest's runner reads the same way):
//!
//! [`swept::Sweep`] (the children, with the measurement started alongside where it can wait at
//! its gate) -> [`merged`] (warmup-merge's summary, typed) -> [`published::Published`] (where
//! warmup-publish put the configs, and the costs kept) -> [`verdict::Verdict`] (what the gate is
//! told: `judgment`) -> [`measured::Measured`] (the measurement run to its end) ->
//! [`report`] (the run summary, the scratch, the exit status). Every stop signal, whenever it
//! comes, is one [`crate::signal::ShutdownRequest`] for every job: the children, a tool, the
//! measurement ([`rest::Rest`] waits for them all).
//!
//! warmup-merge, warmup-publish and warmup-costs run as child tools, not library calls: while
//! one runs, this process goes on reading the stop signals and supervising the measurement's
//! deadlines (a library call would block that loop), a second signal can SIGKILL a tool's group
//! where a call could not be cut short, and each tool's lines, exit status and atomic writes are
//! exactly those a person composing the tools step by step sees. Their outputs are typed on both
//! sides: `protocol::summary::MergeSummary` and `protocol::replay::ReplayEnv`.
//!
//! Once the measurement has started, nothing fails the run with an error: what goes wrong is a
//! line and the fallback to live tuning, as the measurement must still be seen to its end.

pub mod finish;
pub mod gate;
pub mod judgment;
mod measured;
pub mod measurement;
mod merged;
mod published;
mod report;
mod rest;
mod swept;
pub mod tools;
mod verdict;

use crate::signal::{Shutdown, Signals};
use crate::sweep::prepare::{self, PreparedRun};
use crate::sweep::supervisor::Limits;
use crate::sweep::watchdog::Watchdog;
use anyhow::Result;
use nix::unistd::Pid;
use protocol::env;
use protocol::layout::Scratch;
use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use toolkit::Status;

/// What the run says, as scripts/warmup says it (its `TAG`, checked below to be the same).
const TAG: &str = "[parallel-warmup]";

fn say(line: &str) {
    eprintln!("{TAG} {line}");
}

/// The environment variables that reach the sweep's children only, never the measurement.
const SWEEP_ONLY: [&str; 3] = [protocol::lock::LOCK_FD, env::RESUME_DIR, env::FRESH];

/// What the command line asks of a `--measure` run besides the sweep's plan.
#[derive(Debug, Clone, Copy)]
pub struct Options<'a> {
    pub command: &'a [OsString],
    pub limits: Limits,
    /// `--record-dir`.
    pub record_dir: Option<&'a Path>,
    pub discard_scratch: bool,
    pub summary: Option<&'a Path>,
    /// `--fresh`, said once as the run starts.
    pub fresh: bool,
    /// `--signature`: the sidecar names the run complete when every shard ends ok.
    pub signature: Option<&'a str>,
}

/// Where the run's configs go, and what the tools run under.
#[derive(Debug)]
struct Place<'a> {
    scratch: &'a Scratch,
    /// `--record-dir` or the record variable, absolute; `None`: none given.
    record_dir: Option<PathBuf>,
    /// The record folder, else `SCRATCH/merged`: where a measurement started early looks.
    publish_dir: PathBuf,
    /// The scratch lock, lent to each tool.
    lock: Option<File>,
}

/// The `--measure` run, from the hold on the scratch to the measurement's end.
pub fn run(opts: &Options<'_>, prepared: &PreparedRun, parent: Pid) -> Result<Status> {
    let _hold = prepare::hold_scratch(prepared)?;
    if opts.fresh {
        say("--fresh: every key is tuned again");
    }
    let place = place(opts, &prepared.scratch);
    // The watchdog first, while this is the only thread and before the gate exists (a fork
    // would hold its write end); then the signals, before any job starts.
    let watchdog = Watchdog::start(&prepared.run_id)?;
    let signals = Signals::install(parent)?;
    let mut shutdown = Shutdown::default();
    let mut measurement = measured::start_early(opts.command, &place.publish_dir, &signals);
    let sweep = swept::Sweep::run(
        prepared,
        opts.limits,
        (&signals, &mut shutdown, watchdog),
        measurement.as_mut(),
    )?;
    let mut rest = rest::Rest::new(&signals, &mut shutdown, opts.limits.grace, measurement);
    if rest.stopped().is_some() {
        let published = published::after_stop(&mut rest, &place);
        return report::stopped(opts, rest, &sweep, published.report(&place));
    }
    let merged = merged::merge(&mut rest, &place);
    // Nothing missing: every shard ran to its end, ok (docs/CONTRACT.md, "complete_for").
    let complete = opts.signature.filter(|_| sweep.all_ok());
    let published = published::Published::run(&mut rest, merged, &place, complete);
    if rest.stopped().is_some() {
        return report::stopped(opts, rest, &sweep, published.report(&place));
    }
    published.keep_costs(&mut rest, &place, &prepared.plan);
    let verdict = verdict::Verdict::of(&sweep, published, &place, &rest, &prepared.plan.op);
    let measured = measured::hand_over(&mut rest, &verdict, opts.command)?;
    report::finish(opts, rest, &sweep, verdict.report(&place, measured))
}

/// Lends the caller's lock to the tools alone, and says where the configs go.
fn place<'a>(opts: &Options<'_>, scratch: &'a Scratch) -> Place<'a> {
    // A lock the caller lent reaches the tools, not the measurement nor the children.
    if let Some(fd) = protocol::lock::lent_fd_number().filter(|fd| *fd > 2) {
        // SAFETY: F_SETFD sets only the close-on-exec flag of our own descriptor; a number
        // that is not open fails (EBADF) and is left alone.
        #[allow(unsafe_code)]
        unsafe {
            nix::libc::fcntl(fd, nix::libc::F_SETFD, nix::libc::FD_CLOEXEC);
        }
    }
    let record_dir = opts
        .record_dir
        .map(Path::to_path_buf)
        .or_else(|| env::record_dir_of(std::env::var_os(env::RECORD_DIR).as_deref()))
        .map(|d| std::path::absolute(&d).unwrap_or(d))
        .filter(|d| !d.as_os_str().is_empty());
    Place {
        scratch,
        publish_dir: record_dir
            .clone()
            .unwrap_or_else(|| scratch.fallback_records()),
        record_dir,
        lock: File::open(scratch.lock_file()).ok(),
    }
}

/// COMMAND run as the caller would have run it, replacing this process (its status is then the
/// run's), after saying why there is no warmup; 127 when it cannot be run.
pub fn plain(command: &[OsString], why: &str) -> Status {
    use std::os::unix::process::CommandExt;
    say(&format!(
        "{why}; falling back to the normal serial autotune"
    ));
    let mut cmd = std::process::Command::new(&command[0]);
    cmd.args(&command[1..]);
    for var in SWEEP_ONLY {
        cmd.env_remove(var);
    }
    let e = cmd.exec();
    eprintln!(
        "{}: running {}: {e}",
        crate::TOOL,
        command[0].to_string_lossy()
    );
    Status::Passed(127)
}

fn path_text(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    /// scripts/warmup says its own lines (before it becomes warmup-spawn) with the same prefix:
    /// one prefix, spelled here, which the script must match.
    #[test]
    fn scripts_warmup_says_its_lines_with_the_same_prefix() {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/warmup");
        let text = std::fs::read_to_string(script).expect("scripts/warmup");
        let line = format!("readonly TAG='{}'", super::TAG);
        assert!(text.lines().any(|l| l == line), "{script} lacks {line}");
    }
}
