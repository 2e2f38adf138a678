//! The first phase: the sweep, supervised with the measurement alongside. A sweep that cannot
//! run is a line and no statuses: the measurement still runs, tuning live.

use super::say::say;
use crate::measure::measurement::Measurement;
use crate::signal::{Shutdown, Signals};
use crate::sweep::prepare::PreparedRun;
use crate::sweep::progress::Progress;
use crate::sweep::status;
use crate::sweep::supervisor::Limits;
use crate::sweep::watchdog::Watchdog;
use crate::sweep::{sweep, Watch};
use anyhow::Result;
use protocol::status::{Outcome, ShardStatus};
use protocol::summary::Summary;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What the sweep gave.
#[derive(Debug)]
pub struct Sweep {
    /// One per shard that started.
    pub statuses: Vec<ShardStatus>,
    /// How many shards the plan ran.
    pub shards: usize,
    pub wall: Duration,
    /// The sweep's run summary, which the run's adds to.
    pub summary: Summary,
    /// Failed or timed-out shards, with their logs.
    pub failed: Vec<(usize, PathBuf)>,
    pub scratch: PathBuf,
}

impl Sweep {
    /// Runs the sweep of `prepared` to its end; `watchdog`'s work ends with it.
    pub fn run(
        prepared: &PreparedRun,
        limits: Limits,
        (signals, shutdown, mut watchdog): (&Signals, &mut Shutdown, Watchdog),
        measurement: Option<&mut Measurement>,
    ) -> Result<Sweep> {
        let (scratch, jobs) = (&prepared.scratch, &prepared.jobs);
        let mut progress = Progress::new(&prepared.devices);
        let t0 = Instant::now();
        let mut watch = Watch {
            signals,
            shutdown,
            watchdog: &mut watchdog,
            progress: &mut progress,
        };
        let swept = sweep(prepared, limits, &mut watch, measurement);
        watchdog.finish();
        let wall = t0.elapsed();
        let statuses = match swept {
            Ok(end) => end.statuses,
            Err(e) => {
                say(&format!(
                    "the sweep could not run ({e:#}); falling back to the normal serial autotune (scratch kept in {})",
                    scratch.root().display()
                ));
                Vec::new()
            }
        };
        progress.summary(&statuses, jobs.len(), wall);
        let summary = status::summary(&prepared.plan.op, jobs, &statuses, wall)?;
        let failed = jobs
            .iter()
            .filter(|job| {
                let status = statuses.iter().find(|s| s.shard == job.shard);
                matches!(Outcome::of(status), Outcome::Failed | Outcome::TimedOut)
            })
            .map(|job| (job.shard, job.log.clone()))
            .collect();
        Ok(Sweep {
            statuses,
            shards: jobs.len(),
            wall,
            summary,
            failed,
            scratch: scratch.root().to_path_buf(),
        })
    }

    /// Shards that ran to the end (`ok`).
    pub fn ok(&self) -> usize {
        self.statuses
            .iter()
            .filter(|s| s.outcome() == Outcome::Ok)
            .count()
    }

    /// Whether every shard ran to a good end.
    pub fn all_ok(&self) -> bool {
        self.statuses.len() == self.shards
            && self.statuses.iter().all(|s| s.outcome() == Outcome::Ok)
    }
}
