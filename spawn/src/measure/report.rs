//! The run's report, a leaf that `run` fills as the phases hand their values forward: the scratch
//! removed or kept (`--discard-scratch`), the run summary written (docs/CONTRACT.md, "Run
//! summaries": the sweep's lines and warmup-merge's, then the measurement's), and the exit
//! status: 128+N when a signal stopped the run, else the measurement's.

use super::measurement::{Start, Told};
use super::say::say;
use anyhow::{Context, Result};
use nix::sys::signal::Signal;
use protocol::summary::{key, MergeSummary, Summary};
use std::path::{Path, PathBuf};
use toolkit::Status;

/// How the measurement went, for the run summary and the exit status.
#[derive(Debug, Clone, Copy, Default)]
pub struct Measured {
    pub told: Option<Told>,
    pub start: Option<Start>,
    /// Its exit status; `None`: it did not run, or did not end.
    pub status: Option<u8>,
}

/// What the run summary adds to the sweep's.
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

/// How the run ends: what stopped it, and what the caller asked of its end.
#[derive(Debug, Clone, Copy)]
pub struct End<'a> {
    pub stopped: Option<Signal>,
    /// `--discard-scratch`.
    pub discard_scratch: bool,
    /// `--summary FILE`.
    pub summary: Option<&'a Path>,
}

impl Report {
    /// Removes or keeps the scratch, writes the run summary (`sweep`'s, added to); the run's
    /// status.
    pub fn end(self, end: End<'_>, sweep: &Summary) -> Result<Status> {
        let measured = self.measured;
        if end.stopped.is_some() && matches!(measured.told, Some(Told::Word(_) | Told::NoGate)) {
            say(&format!(
                "stopped by a signal: the measurement was stopped{}",
                measured
                    .status
                    .map_or_else(String::new, |s| format!(" (exit {s})"))
            ));
        }
        if end.discard_scratch {
            self.discard_scratch(end.stopped.is_some());
        }
        if let Some(target) = end.summary {
            self.summary(sweep.clone(), end.stopped)?
                .write(target)
                .with_context(|| format!("writing the run summary to {}", target.display()))?;
        }
        Ok(match (end.stopped, measured.status) {
            (Some(sig), _) => Status::Signalled(sig as i32),
            (None, Some(code)) => Status::Passed(code),
            (None, None) => Status::Passed(127),
        })
    }

    /// The sweep's summary with the merge's counts, the published folder and the measurement.
    fn summary(&self, mut summary: Summary, stopped: Option<Signal>) -> Result<Summary> {
        let measured = self.measured;
        if let Some(merge) = &self.merge {
            // Its counts and its conflict list; its merged file and shards are the sweep's.
            let counts = MergeSummary {
                merged: None,
                shards: Vec::new(),
                ..merge.clone()
            };
            counts.add_to(&mut summary)?;
        }
        if let Some(dir) = &self.published {
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
        Ok(summary)
    }

    /// `--discard-scratch`: the scratch removed when nothing in it is needed, else where it is
    /// kept.
    fn discard_scratch(&self, stopped: bool) {
        let Some(root) = &self.scratch else {
            return;
        };
        if self.keep || stopped {
            say(&format!("scratch kept in {}", root.display()));
        } else if let Err(e) = std::fs::remove_dir_all(root) {
            say(&format!(
                "cannot remove the scratch {} ({e}); remove it by hand",
                root.display()
            ));
        }
    }
}
