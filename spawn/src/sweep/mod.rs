//! The sweep: every job of a prepared run supervised to its end on its devices, within the
//! run's limits. `warmup-spawn --plan` is this alone ([`alone`]); `--measure` runs it with the
//! measurement alongside ([`sweep`]), then goes on (`crate::measure`).
//!
//! `prepare` says what a run is, read and checked before anything is written: the plan, the
//! scratch, one `job` per shard, the devices; `select` which shards run (`--only`,
//! `--index-from-env`) and what such a run holds on the scratch; `by_key` a by-key plan's claims.
//! `supervisor` is the loop over `child` (one child's life); `process` groups, markers and
//! orphans; `watchdog` what stops the children if warmup-spawn is killed; `log` a child's output;
//! `status` a child's status.json and the run summary (their type and outcome rule are
//! `protocol::status`'s); `progress` what a person sees; `shell` the `--dry-run` lines.

pub mod by_key;
pub mod child;
pub mod job;
pub mod log;
pub mod prepare;
pub mod process;
pub mod progress;
pub mod select;
pub mod shell;
pub mod status;
pub mod supervisor;
pub mod watchdog;

use crate::measure::measurement::Measurement;
use crate::signal::{Shutdown, Signals};
use crate::sweep::progress::Progress;
use crate::sweep::watchdog::Watchdog;
use anyhow::Result;
use prepare::PreparedRun;
use std::path::Path;
use std::time::Instant;
use supervisor::{Limits, RunEnd};
use toolkit::Status;

/// What watches a sweep: the run's signals and stops, the watchdog, what a person sees.
#[derive(Debug)]
pub struct Watch<'a> {
    pub signals: &'a Signals,
    pub shutdown: &'a mut Shutdown,
    pub watchdog: &'a mut Watchdog,
    pub progress: &'a mut Progress,
}

/// Runs and supervises every job of `prepared` to the end, with `measurement` (`--measure`'s,
/// started with the sweep) supervised alongside.
pub fn sweep(
    prepared: &PreparedRun,
    limits: Limits,
    watch: &mut Watch<'_>,
    measurement: Option<&mut Measurement>,
) -> Result<RunEnd> {
    supervisor::supervise(
        &prepared.jobs,
        supervisor::Run {
            devices: &prepared.devices,
            limits,
            signals: watch.signals,
            shutdown: &mut *watch.shutdown,
            measurement,
            watchdog: &mut *watch.watchdog,
            progress: &mut *watch.progress,
            run_id: &prepared.run_id,
        },
    )
}

/// `warmup-spawn --plan`: takes the scratch, clears the chosen shards' outputs, runs and
/// supervises their children to the end and writes the summary to `summary`; `parent` is the
/// caller whose death stops the run.
pub fn alone(
    prepared: &PreparedRun,
    limits: Limits,
    summary: Option<&Path>,
    parent: nix::unistd::Pid,
) -> Result<Status> {
    let jobs = &prepared.jobs;
    let _hold = prepare::hold_scratch(prepared)?;

    // The watchdog first, while this is the only thread and no signal is blocked yet.
    let mut watchdog = Watchdog::start(&prepared.run_id)?;
    let signals = Signals::install(parent)?;
    let mut shutdown = Shutdown::default();
    let mut progress = Progress::new(&prepared.devices);
    let t0 = Instant::now();
    let mut watch = Watch {
        signals: &signals,
        shutdown: &mut shutdown,
        watchdog: &mut watchdog,
        progress: &mut progress,
    };
    let end = sweep(prepared, limits, &mut watch, None)?;
    watchdog.finish();
    let wall = t0.elapsed();
    progress.summary(&end.statuses, jobs.len(), wall);
    prepare::write_summary(summary, &prepared.plan, jobs, &end.statuses, wall)?;
    Ok(match end.stopped_by {
        Some(sig) => Status::Signalled(sig as i32),
        None if end.write_failed || end.statuses.iter().any(|s| !s.ok()) => Status::Partial,
        None => Status::Done,
    })
}
