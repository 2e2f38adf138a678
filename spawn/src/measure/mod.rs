//! The run after the sweep: `--measure`'s (the sweep, then merge, publish and the measurement, in
//! one supervised process) and `--finish`'s (`finish`: merge and publish a sweep whose shards ran
//! elsewhere), as phases that hand each other typed values and do not know each other (nextest's
//! runner reads the same way); [`run`] hands them forward and fills the [`report::Report`]:
//!
//! [`swept::Sweep`] (the children, with the measurement started alongside where it can wait at
//! its gate) -> [`merged`] (warmup-merge's summary, typed) -> [`published::Published`] (where
//! warmup-publish put the configs, and the costs kept) -> [`verdict::Verdict`] (what the gate is
//! told: `judgment`) -> [`measured`] (the measurement run to its end) -> [`report::Report`] (the
//! run summary, the scratch, the exit status). Every stop signal, whenever it comes, is one
//! [`crate::signal::ShutdownRequest`] for every job: the children, a tool, the measurement
//! ([`rest::Rest`] waits for them all, and runs each tool: the one way a tool runs).
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
mod place;
mod published;
mod report;
mod rest;
mod say;
mod swept;
pub mod tools;
mod verdict;

use crate::signal::{Shutdown, Signals};
use crate::sweep::prepare::{self, PreparedRun};
use crate::sweep::supervisor::Limits;
use crate::sweep::watchdog::Watchdog;
use anyhow::Result;
use measured::SWEEP_ONLY;
use nix::unistd::Pid;
use place::Place;
use published::Published;
use report::{End, Report};
use rest::Rest;
use say::say;
use std::ffi::OsString;
use std::path::Path;
use toolkit::Status;

/// What the command line asks of a `--measure` run besides the sweep's plan.
#[derive(Debug, Clone, Copy)]
pub struct Options<'a> {
    pub command: &'a [OsString],
    pub limits: Limits,
    /// The record folder (`protocol::env::record_folder`); `None`: `SCRATCH/merged`.
    pub record_dir: Option<&'a Path>,
    pub discard_scratch: bool,
    pub summary: Option<&'a Path>,
    /// `--fresh`, said once as the run starts.
    pub fresh: bool,
    /// `--signature`: the sidecar names the run complete when every shard ends ok.
    pub signature: Option<&'a str>,
    /// `--measure-after`: the measurement starts after publishing, without the harness's gate.
    pub measure_after: bool,
}

/// The `--measure` run, from the hold on the scratch to the measurement's end.
pub fn run(opts: &Options<'_>, prepared: &PreparedRun, parent: Pid) -> Result<Status> {
    let _hold = prepare::hold_scratch(prepared)?;
    if opts.fresh {
        say("--fresh: every key is tuned again");
    }
    let record_dir = opts.record_dir.map(Path::to_path_buf);
    let place = Place::new(&prepared.scratch, &prepared.plan.op, record_dir);
    // The watchdog first, while this is the only thread and before the gate exists (a fork
    // would hold its write end); then the signals, before any job starts.
    let watchdog = Watchdog::start(&prepared.run_id)?;
    let signals = Signals::install(parent)?;
    let mut shutdown = Shutdown::default();
    let mut measurement = if opts.measure_after {
        say("the measurement starts after the sweep (--measure-after): COMMAND runs as given, no -p warmup_harness added");
        None
    } else {
        measured::start_early(opts.command, &place.publish_dir, &signals)
    };
    let sweep = swept::Sweep::run(
        prepared,
        opts.limits,
        (&signals, &mut shutdown, watchdog),
        measurement.as_mut(),
    )?;
    let early = measurement.is_some();
    let mut rest = Rest::new(&signals, &mut shutdown, opts.limits.grace, measurement);
    if rest.stopped().is_some() {
        let published = published::after_stop(&mut rest, &place);
        return stopped(opts, rest, &sweep, report(&place, &published));
    }
    let merged = merged::merge(&mut rest, &place);
    // Nothing missing: every shard ran to its end, ok (docs/CONTRACT.md, "complete_for").
    let complete = opts.signature.filter(|_| sweep.all_ok());
    let published = Published::run(&mut rest, merged, &place, complete);
    if rest.stopped().is_some() {
        return stopped(opts, rest, &sweep, report(&place, &published));
    }
    published.keep_costs(&mut rest, &place, &prepared.plan);
    let verdict = verdict::Verdict::of(&sweep, &published, &place, early);
    let word = verdict.ruling.word;
    let measured = measured::hand_over(&mut rest, word, published.dir.as_deref(), opts.command)?;
    let report = Report {
        keep: verdict.keep,
        measured,
        ..report(&place, &published)
    };
    report.end(end(opts, &rest), &sweep.summary)
}

/// What the report says of merging and publishing.
fn report(place: &Place<'_>, published: &Published) -> Report {
    Report {
        scratch: Some(place.scratch.root().to_path_buf()),
        merge: published.merged.summary().cloned(),
        published: published.dir.clone(),
        ..Report::default()
    }
}

fn end<'a>(opts: &Options<'a>, rest: &Rest<'_>) -> End<'a> {
    End {
        stopped: rest.stopped(),
        discard_scratch: opts.discard_scratch,
        summary: opts.summary,
    }
}

/// A stopped run: the measurement, stopped with everything else, waited for; exit 128+N.
fn stopped(
    opts: &Options<'_>,
    mut rest: Rest<'_>,
    sweep: &swept::Sweep,
    report: Report,
) -> Result<Status> {
    let measured = measured::after_stop(&mut rest)?;
    say("stopped by a signal; every child was stopped, the measurement does not run");
    let report = Report { measured, ..report };
    report.end(end(opts, &rest), &sweep.summary)
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
        crate::flags::TOOL,
        command[0].to_string_lossy()
    );
    Status::Passed(127)
}
