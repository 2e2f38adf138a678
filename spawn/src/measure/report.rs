//! The run's end: the scratch removed or kept (`--discard-scratch`), the run summary written
//! (docs/CONTRACT.md, "Run summaries": the sweep's lines and warmup-merge's, then the
//! measurement's), and the exit status: 128+N when a signal stopped the run, else the
//! measurement's.

use super::measured::Measured;
use super::rest::Rest;
use super::swept::Sweep;
use super::{say, Options};
use crate::measure::measurement::{Start, Told};
use anyhow::{Context, Result};
use protocol::summary::{key, MergeSummary};
use std::path::PathBuf;
use toolkit::Status;

/// What the run's summary adds to the sweep's.
#[derive(Debug, Default)]
pub struct Report {
    /// The scratch, for `--discard-scratch`.
    pub scratch: Option<PathBuf>,
    /// Something in the scratch is needed still: its logs, its configs.
    pub keep: bool,
    pub merge: Option<MergeSummary>,
    pub published: Option<PathBuf>,
    pub measured: Measured,
}

/// A stopped run: the measurement, stopped with everything else, waited for; exit 128+N.
pub fn stopped(
    opts: &Options<'_>,
    mut rest: Rest<'_>,
    sweep: &Sweep,
    mut report: Report,
) -> Result<Status> {
    rest.wait(None)?;
    if let Some(m) = &rest.measurement {
        report.measured = Measured {
            told: Some(m.state().told()),
            start: Some(m.start),
            status: m.state().status(),
        };
    }
    say("stopped by a signal; every child was stopped, the measurement does not run");
    finish(opts, rest, sweep, report)
}

/// Removes or keeps the scratch, writes the run summary; the run's status.
pub fn finish(opts: &Options<'_>, rest: Rest<'_>, sweep: &Sweep, report: Report) -> Result<Status> {
    let stopped = rest.stopped();
    let measured = report.measured;
    if stopped.is_some() && matches!(measured.told, Some(Told::Word(_) | Told::NoGate)) {
        say(&format!(
            "stopped by a signal: the measurement was stopped{}",
            measured
                .status
                .map_or_else(String::new, |s| format!(" (exit {s})"))
        ));
    }
    if opts.discard_scratch {
        discard_scratch(&report, stopped.is_some());
    }
    if let Some(target) = opts.summary {
        let mut summary = sweep.summary.clone();
        if let Some(merge) = &report.merge {
            // Its counts and its conflict list; its merged file and shards are the sweep's.
            let counts = MergeSummary {
                merged: None,
                shards: Vec::new(),
                ..merge.clone()
            };
            counts.add_to(&mut summary)?;
        }
        if let Some(dir) = &report.published {
            summary.path(key::PUBLISHED, &[], dir)?;
        }
        let told = match measured.told {
            None | Some(Told::NoGate) => "none",
            Some(Told::Nothing | Told::Closed) => "closed",
            Some(Told::Word(word)) => word.line(),
        };
        summary.value(key::GATE, told);
        summary.value(key::MEASUREMENT, measured.start.map_or("none", Start::word));
        if let Some(status) = measured.status {
            summary.value(key::MEASUREMENT_STATUS, status);
        }
        if let Some(sig) = stopped {
            summary.value(key::STOP_SIGNAL, sig as i32);
        }
        summary
            .write(target)
            .with_context(|| format!("writing the run summary to {}", target.display()))?;
    }
    Ok(match (stopped, measured.status) {
        (Some(sig), _) => Status::Signalled(sig as i32),
        (None, Some(code)) => Status::Passed(code),
        (None, None) => Status::Passed(127),
    })
}

/// `--discard-scratch`: the scratch removed when nothing in it is needed, else where it is kept.
fn discard_scratch(report: &Report, stopped: bool) {
    let Some(root) = &report.scratch else {
        return;
    };
    if report.keep || stopped {
        say(&format!("scratch kept in {}", root.display()));
    } else if let Err(e) = std::fs::remove_dir_all(root) {
        say(&format!(
            "cannot remove the scratch {} ({e}); remove it by hand",
            root.display()
        ));
    }
}
