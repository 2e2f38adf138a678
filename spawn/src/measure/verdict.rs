//! The fourth phase: what the gate is told, judged from the sweep and where the configs went
//! (`judgment`), said on stderr, and whether the scratch must be kept.

use super::gate::Word;
use super::judgment::{self, Findings, Ruling};
use super::place::Place;
use super::published::Published;
use super::say::say;
use super::swept::Sweep;

/// The judgment, and what it means for the scratch.
#[derive(Debug)]
pub struct Verdict {
    pub ruling: Ruling,
    /// Something in the scratch is needed still: its logs, its configs.
    pub keep: bool,
}

impl Verdict {
    /// Judges, and says why; `early`: a measurement started with the sweep waits for the
    /// configs in `place.publish_dir`.
    pub fn of(sweep: &Sweep, published: &Published, place: &Place<'_>, early: bool) -> Verdict {
        let ruling = judgment::rule(&Findings {
            op: place.op,
            scratch: &sweep.scratch,
            shards: sweep.shards,
            ok: sweep.ok(),
            failed: sweep.failed.clone(),
            wall_seconds: sweep.wall.as_secs_f64(),
            summed_seconds: sweep.statuses.iter().map(|s| s.seconds).sum(),
            merged: published.merged.clone(),
            published: published.dir.clone(),
            publish_dir: early.then_some(place.publish_dir.as_path()),
        });
        for line in &ruling.lines {
            say(line);
        }
        let conflicted = published.merged.summary().is_some_and(|m| m.conflicts > 0);
        let fallback = place.scratch.fallback_records();
        let keep = ruling.word != Some(Word::Replay)
            || published.dir.as_deref() == Some(fallback.as_path())
            || conflicted
            || !sweep.all_ok();
        Verdict { ruling, keep }
    }
}
