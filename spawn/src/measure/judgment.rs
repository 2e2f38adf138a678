//! The judgment after a sweep: from what the sweep, warmup-merge and warmup-publish gave, what
//! the measurement is told ([`Word`], or nothing: the gate closed) and the lines that say why;
//! and, for `--finish` (a sweep whose shards ran elsewhere), which shards did not finish and in
//! what words ([`unfinished`]) and what was merged ([`finished`]). Free of system calls, so that
//! it is tested alone.

use crate::measure::gate::Word;
use protocol::layout::Scratch;
use protocol::status::Outcome;
use protocol::summary::MergeSummary;
use std::path::{Path, PathBuf};

/// The warning for keys whose winners differed between shards, as both runs give it.
fn conflict_warning(conflicts: usize, list: &str) -> String {
    format!("WARNING {conflicts} config key(s) got different winners across shards (list: {list})")
}

/// Each of the plan's shards (`inputs`) that did not end `ok`, with the line that says how it
/// ended and where its log is, in index order.
pub fn unfinished(merged: &MergeSummary, scratch: &Scratch) -> Vec<(usize, String)> {
    (0..merged.inputs)
        .filter_map(|i| {
            let outcome = merged.shards.iter().find(|s| s.index == i);
            let words = match outcome.map_or(Outcome::NotStarted, |s| s.outcome) {
                Outcome::Ok => return None,
                Outcome::Failed => "failed".to_owned(),
                Outcome::TimedOut => "timed out (warmup-spawn --timeout)".to_owned(),
                Outcome::Stopped => {
                    "was stopped by a signal (scancel, or its --time ran out)".to_owned()
                }
                Outcome::NotStarted => format!(
                    "did not start or was refused (no status; see {}/shard-*_{i}.out)",
                    scratch.slurm().display()
                ),
            };
            let log = scratch.log(i);
            Some((i, format!("shard {i} {words}; log: {}", log.display())))
        })
        .collect()
}

/// What was merged from how many shards and published in `target`, the conflict warning, and
/// how to measure on it.
pub fn finished(merged: &MergeSummary, unfinished: usize, target: &Path, op: &str) -> Vec<String> {
    let k = merged.inputs;
    let mut lines = vec![format!(
        "merged {} kernels / {} keys from the records of {} of {k} shards ({} finished) -> {}/{op}.json",
        merged.kernels,
        merged.configs,
        merged.recovered,
        k.saturating_sub(unfinished),
        target.display()
    )];
    if merged.conflicts > 0 {
        let list = merged
            .conflicts_file
            .as_ref()
            .map_or_else(String::new, |p| p.display().to_string());
        lines.push(conflict_warning(merged.conflicts, &list));
    }
    lines.push(format!(
        "measure with: {}={} (and {} unset), e.g. eval the lines above",
        protocol::env::REPLAY_DIR,
        target.display(),
        protocol::env::RECORD_DIR
    ));
    lines
}

/// How warmup-merge went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merged {
    /// Merged: what its summary says.
    Configs(MergeSummary),
    /// Exit 3: no configs recovered; its summary, where it could be read.
    Nothing(Option<MergeSummary>),
    /// Any other failure: its exit status, where it exited.
    Failed(Option<i32>),
}

impl Merged {
    /// warmup-merge's summary, where it wrote one.
    pub fn summary(&self) -> Option<&MergeSummary> {
        match self {
            Merged::Configs(s) | Merged::Nothing(Some(s)) => Some(s),
            Merged::Nothing(None) | Merged::Failed(_) => None,
        }
    }
}

/// What the run learned by the time the gate is due, for [`rule`].
#[derive(Debug, Clone)]
pub struct Findings<'a> {
    pub op: &'a str,
    pub scratch: &'a Path,
    pub shards: usize,
    /// Shards that ran to the end (`ok`).
    pub ok: usize,
    /// Failed or timed-out shards, with their logs.
    pub failed: Vec<(usize, PathBuf)>,
    pub wall_seconds: f64,
    pub summed_seconds: f64,
    pub merged: Merged,
    /// Where warmup-publish published (`None`: it failed, or did not run).
    pub published: Option<PathBuf>,
    /// Where the measurement started with the sweep was told the configs would be.
    pub publish_dir: Option<&'a Path>,
}

/// What to write into the gate, and the lines that say why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ruling {
    /// `None`: the configs went elsewhere than promised: the gate is closed and COMMAND runs
    /// again after the sweep, with the replay environment.
    pub word: Option<Word>,
    pub lines: Vec<String>,
}

/// The decision: `replay` once published, `live` when nothing was recovered or merging or
/// publishing failed, nothing (closed) when the configs are not where the measurement looks.
pub fn rule(f: &Findings<'_>) -> Ruling {
    let scratch = f.scratch.display();
    let live = |line: String| Ruling {
        word: Some(Word::Live),
        lines: vec![line],
    };
    let recovered = |s: &Option<MergeSummary>| s.as_ref().map(|s| s.recovered);
    let (kernels, configs, conflicts, conflicts_file) = match &f.merged {
        Merged::Configs(s) => (s.kernels, s.configs, s.conflicts, &s.conflicts_file),
        Merged::Nothing(s) if recovered(s) == Some(0) && f.ok > 0 => {
            return live(format!(
                "no configs recovered: {} shard(s) ran to the end but none wrote a record, so no \
                 harness is active in the children: install warmup-harness (pip install \
                 ./harness) or add -p warmup_harness; falling back to the normal serial autotune \
                 (worker logs kept in {scratch})",
                f.ok
            ))
        }
        Merged::Nothing(_) => {
            return live(format!(
                "no configs recovered in {:.2}s; falling back to the normal serial autotune \
                 (worker logs kept in {scratch})",
                f.wall_seconds
            ))
        }
        Merged::Failed(_) => {
            return live(format!(
                "merging the shards' records failed (see above); falling back to the normal \
                 serial autotune (scratch kept in {scratch})"
            ))
        }
    };
    let Some(dir) = &f.published else {
        return live(format!(
            "publishing the merged configs failed (see above); falling back to the normal serial \
             autotune (scratch kept in {scratch})"
        ));
    };
    let mut lines = vec![format!(
        "sweep done in {:.2}s on {} devices (the shards' wall times add up to {:.2}s): {kernels} \
         kernels / {configs} keys -> {}/{}.json; measurement continues serially on one GPU",
        f.wall_seconds,
        f.shards,
        f.summed_seconds,
        dir.display(),
        f.op
    )];
    if !f.failed.is_empty() {
        let which: Vec<String> = f
            .failed
            .iter()
            .map(|(i, log)| format!("shard {i} (log: {})", log.display()))
            .collect();
        lines.push(format!(
            "WARNING shard(s) exited non-zero or timed out: {}; their keys fall back to a live sweep",
            which.join(" ")
        ));
    }
    if conflicts > 0 {
        let list = conflicts_file
            .as_ref()
            .map_or_else(String::new, |p| p.display().to_string());
        lines.push(format!(
            "{} — parallel interference reached the sweep. Treat this run as a rough pass; unset \
             PARALLEL_WARMUP_GPUS for a clean baseline",
            conflict_warning(conflicts, &list)
        ));
    }
    let word = match f.publish_dir {
        Some(publish_dir) if publish_dir != dir => {
            lines.push(format!(
                "the configs went to {}, not to {} where the measurement looks for them; it is \
                 stopped",
                dir.display(),
                publish_dir.display()
            ));
            None
        }
        _ => Some(Word::Replay),
    };
    Ruling { word, lines }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn findings(merged: Merged, published: Option<&str>) -> Findings<'static> {
        Findings {
            op: "mm",
            scratch: Path::new("/s"),
            shards: 2,
            ok: 2,
            failed: Vec::new(),
            wall_seconds: 1.5,
            summed_seconds: 2.75,
            merged,
            published: published.map(PathBuf::from),
            publish_dir: Some(Path::new("/rec")),
        }
    }

    fn configs(conflicts: usize) -> Merged {
        Merged::Configs(MergeSummary {
            kernels: 1,
            configs: 12,
            conflicts,
            conflicts_file: Some("/s/conflicts.json".into()),
            ..MergeSummary::default()
        })
    }

    fn nothing(recovered: usize) -> Merged {
        Merged::Nothing(Some(MergeSummary {
            recovered,
            ..MergeSummary::default()
        }))
    }

    #[test]
    fn published_where_promised_is_replay_with_the_sweep_done_line() {
        let v = rule(&findings(configs(0), Some("/rec")));
        assert_eq!(v.word, Some(Word::Replay));
        assert_eq!(v.lines.len(), 1, "{:?}", v.lines);
        assert!(
            v.lines[0].starts_with("sweep done in 1.50s on 2 devices"),
            "{:?}",
            v.lines
        );
        assert!(
            v.lines[0].contains("1 kernels / 12 keys -> /rec/mm.json"),
            "{:?}",
            v.lines
        );
    }

    #[test]
    fn nothing_recovered_is_live_and_blames_a_missing_harness_when_shards_ran_to_the_end() {
        let v = rule(&findings(nothing(0), None));
        assert_eq!(v.word, Some(Word::Live));
        assert!(
            v.lines[0].starts_with("no configs recovered: 2 shard(s) ran to the end"),
            "{:?}",
            v.lines
        );
        let mut f = findings(nothing(0), None);
        f.ok = 0;
        let v = rule(&f);
        assert_eq!(v.word, Some(Word::Live));
        assert!(
            v.lines[0].starts_with("no configs recovered in 1.50s"),
            "{:?}",
            v.lines
        );
    }

    #[test]
    fn a_failed_merge_or_publish_is_live() {
        let v = rule(&findings(Merged::Failed(None), None));
        assert_eq!(v.word, Some(Word::Live));
        assert!(v.lines[0].starts_with("merging the shards' records failed"));
        let v = rule(&findings(configs(0), None));
        assert_eq!(v.word, Some(Word::Live));
        assert!(v.lines[0].starts_with("publishing the merged configs failed"));
    }

    #[test]
    fn failed_shards_and_conflicts_are_warnings_and_still_replay() {
        let mut f = findings(configs(3), Some("/rec"));
        f.failed = vec![(1, "/s/w1/worker.log".into())];
        let v = rule(&f);
        assert_eq!(v.word, Some(Word::Replay));
        assert!(
            v.lines[1].contains("shard 1 (log: /s/w1/worker.log)"),
            "{:?}",
            v.lines
        );
        assert!(
            v.lines[2].starts_with("WARNING 3 config key(s)"),
            "{:?}",
            v.lines
        );
        assert!(
            v.lines[2].contains("(list: /s/conflicts.json)"),
            "{:?}",
            v.lines
        );
    }

    #[test]
    fn configs_published_elsewhere_than_promised_close_the_gate() {
        let v = rule(&findings(configs(0), Some("/elsewhere")));
        assert_eq!(v.word, None);
        assert!(v
            .lines
            .last()
            .expect("a line")
            .contains("not to /rec where the measurement looks"));
        let mut late = findings(configs(0), Some("/elsewhere"));
        late.publish_dir = None; // no measurement waits: nothing was promised
        assert_eq!(rule(&late).word, Some(Word::Replay));
    }

    #[test]
    fn unfinished_shards_are_named_by_how_they_ended_and_a_missing_one_did_not_start() {
        use protocol::summary::ShardLine;
        let line = |index, outcome: Outcome| ShardLine {
            index,
            outcome,
            log: format!("/s/w{index}/worker.log").into(),
        };
        let merged = MergeSummary {
            inputs: 5,
            shards: vec![
                line(0, Outcome::Ok),
                line(1, Outcome::Failed),
                line(2, Outcome::TimedOut),
                line(3, Outcome::Stopped),
            ],
            ..MergeSummary::default()
        };
        let lines = unfinished(&merged, &Scratch::new("/s"));
        let indices: Vec<usize> = lines.iter().map(|(i, _)| *i).collect();
        assert_eq!(indices, [1, 2, 3, 4]);
        assert_eq!(lines[0].1, "shard 1 failed; log: /s/w1/worker.log");
        assert!(lines[1]
            .1
            .starts_with("shard 2 timed out (warmup-spawn --timeout)"));
        assert!(lines[2].1.starts_with("shard 3 was stopped by a signal"));
        assert!(lines[3].1.starts_with(
            "shard 4 did not start or was refused (no status; see /s/slurm/shard-*_4.out)"
        ));
    }

    #[test]
    fn a_finish_says_what_was_merged_and_warns_of_conflicts_as_the_sweep_does() {
        let merged = MergeSummary {
            inputs: 4,
            recovered: 3,
            kernels: 1,
            configs: 9,
            conflicts: 2,
            conflicts_file: Some("/s/conflicts.json".into()),
            ..MergeSummary::default()
        };
        let lines = finished(&merged, 2, Path::new("/rec"), "mm");
        assert_eq!(
            lines[0],
            "merged 1 kernels / 9 keys from the records of 3 of 4 shards (2 finished) -> /rec/mm.json"
        );
        let swept = rule(&findings(configs(2), Some("/rec")));
        assert!(swept.lines[1].starts_with(&lines[1]), "{lines:?} {swept:?}");
        assert!(lines[2].starts_with("measure with: FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=/rec "));
    }
}
