//! The fourth phase: what the gate is told, judged from the sweep and where the configs went
//! (`judgment`), said on stderr, and whether the scratch must be kept.

use super::measured::Measured;
use super::published::Published;
use super::report::Report;
use super::rest::Rest;
use super::swept::Sweep;
use super::{say, Place};
use crate::measure::gate::Word;
use crate::measure::judgment::{self, Findings};

/// The judgment, with what it was judged from.
#[derive(Debug)]
pub struct Verdict {
    pub judged: judgment::Verdict,
    pub published: Published,
    /// Something in the scratch is needed still: its logs, its configs.
    pub keep: bool,
}

impl Verdict {
    /// Judges, and says why.
    pub fn of(
        sweep: &Sweep,
        published: Published,
        place: &Place<'_>,
        rest: &Rest<'_>,
        op: &str,
    ) -> Verdict {
        let judged = judgment::verdict(&Findings {
            op,
            scratch: &sweep.scratch,
            shards: sweep.shards,
            ok: sweep.ok(),
            failed: sweep.failed.clone(),
            wall_seconds: sweep.wall.as_secs_f64(),
            summed_seconds: sweep.statuses.iter().map(|s| s.seconds).sum(),
            merged: published.merged.clone(),
            published: published.dir.clone(),
            publish_dir: rest
                .measurement
                .as_ref()
                .map(|_| place.publish_dir.as_path()),
        });
        for line in &judged.lines {
            say(line);
        }
        let conflicted = published.merged.summary().is_some_and(|m| m.conflicts > 0);
        let fallback = place.scratch.fallback_records();
        let keep = judged.word != Some(Word::Replay)
            || published.dir.as_deref() == Some(fallback.as_path())
            || conflicted
            || !sweep.all_ok();
        Verdict {
            judged,
            published,
            keep,
        }
    }

    /// What the run summary says, the measurement's end included.
    pub fn report(&self, place: &Place<'_>, measured: Measured) -> Report {
        Report {
            keep: self.keep,
            measured,
            ..self.published.report(place)
        }
    }
}
