//! The measurement's gate (docs/CONTRACT.md, "The gate"): a pipe, not a path. warmup-spawn keeps
//! the write end (close-on-exec: no process it starts holds it) and the measurement inherits the
//! read end, named in `WARMUP_HARNESS_GATE=fd:N`. So only this run can open the gate, and when
//! warmup-spawn dies, SIGKILL included, the kernel closes the write end: a measurement of a
//! killed run reads end of file at its gate and runs no test, and no other run's gate is within
//! its reach.
//!
//! warmup-spawn keeps a read end too, never read while the measurement runs: once it has ended,
//! the line still being there means that it ran no test (it ended before reading it).
//!
//! [`verdict`] is the decision of what to write, from what the sweep, merge and publish gave,
//! with the lines that say why.

use anyhow::{Context, Result};
use nix::fcntl::OFlag;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};

/// The line written into the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Word {
    /// The configs are published where the measurement was told: it replays them.
    Replay,
    /// Nothing was recovered, or merging or publishing failed: it tunes live, as the plain run.
    Live,
}

impl Word {
    pub fn line(self) -> &'static str {
        match self {
            Word::Replay => "replay",
            Word::Live => "live",
        }
    }
}

/// The gate's pipe, as warmup-spawn holds it.
#[derive(Debug)]
pub struct Gate {
    /// `None` once closed: the measurement reads end of file.
    write: Option<File>,
    /// The end the measurement inherits under this number, and warmup-spawn's look at the line.
    read: File,
}

impl Gate {
    pub fn new() -> Result<Gate> {
        let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC)
            .context("making the measurement's gate (a pipe)")?;
        Ok(Gate {
            write: Some(File::from(write)),
            read: File::from(read),
        })
    }

    /// The descriptor the measurement inherits, under the same number.
    pub fn child_fd(&self) -> RawFd {
        self.read.as_raw_fd()
    }

    /// `WARMUP_HARNESS_GATE`'s value.
    pub fn env_value(&self) -> String {
        format!("fd:{}", self.child_fd())
    }

    /// Writes the word's line; a gate already closed stays closed.
    pub fn tell(&mut self, word: Word) {
        if let Some(write) = &mut self.write {
            // Seven bytes into an empty pipe that warmup-spawn also reads: this never blocks.
            if write
                .write_all(format!("{}\n", word.line()).as_bytes())
                .is_err()
            {
                self.write = None;
            }
        }
    }

    /// Whether a line is still in the pipe: read without blocking, once the measurement ended.
    pub fn unread(&mut self) -> bool {
        let flags = nix::fcntl::fcntl(&self.read, nix::fcntl::FcntlArg::F_GETFL)
            .map(OFlag::from_bits_truncate);
        let nonblocking = flags.and_then(|f| {
            nix::fcntl::fcntl(
                &self.read,
                nix::fcntl::FcntlArg::F_SETFL(f | OFlag::O_NONBLOCK),
            )
        });
        if nonblocking.is_err() {
            return false;
        }
        let mut byte = [0u8; 1];
        matches!(self.read.read(&mut byte), Ok(1))
    }
}

/// How warmup-merge went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merged {
    /// Merged: what its summary says.
    Configs {
        kernels: String,
        configs: String,
        conflicts: usize,
        conflicts_file: Option<PathBuf>,
    },
    /// Exit 3: no configs recovered; how many record files were.
    Nothing { recovered: Option<usize> },
    /// Any other failure.
    Failed,
}

/// What the run learned by the time the gate is due, for [`verdict`].
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
pub struct Verdict {
    /// `None`: the configs went elsewhere than promised: the gate is closed and COMMAND runs
    /// again after the sweep, with the replay environment.
    pub word: Option<Word>,
    pub lines: Vec<String>,
}

/// The decision: `replay` once published, `live` when nothing was recovered or merging or
/// publishing failed, nothing (closed) when the configs are not where the measurement looks.
pub fn verdict(f: &Findings<'_>) -> Verdict {
    let scratch = f.scratch.display();
    let live = |line: String| Verdict {
        word: Some(Word::Live),
        lines: vec![line],
    };
    let (kernels, configs, conflicts, conflicts_file) = match &f.merged {
        Merged::Configs {
            kernels,
            configs,
            conflicts,
            conflicts_file,
        } => (kernels, configs, *conflicts, conflicts_file),
        Merged::Nothing { recovered } if *recovered == Some(0) && f.ok > 0 => {
            return live(format!(
                "no configs recovered: {} shard(s) ran to the end but none wrote a record, so no \
                 harness is active in the children: install warmup-harness (pip install \
                 ./harness) or add -p warmup_harness; falling back to the normal serial autotune \
                 (worker logs kept in {scratch})",
                f.ok
            ))
        }
        Merged::Nothing { .. } => {
            return live(format!(
                "no configs recovered in {:.2}s; falling back to the normal serial autotune \
                 (worker logs kept in {scratch})",
                f.wall_seconds
            ))
        }
        Merged::Failed => {
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
         kernels / {configs} configs -> {}/{}.json; measurement continues serially on one GPU",
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
            "WARNING {conflicts} config key(s) got different winners across shards (list: {list}) \
             — parallel interference reached the sweep. Treat this run as a rough pass; unset \
             PARALLEL_WARMUP_GPUS for a clean baseline"
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
    Verdict { word, lines }
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
        Merged::Configs {
            kernels: "1".into(),
            configs: "12".into(),
            conflicts,
            conflicts_file: Some("/s/conflicts.json".into()),
        }
    }

    #[test]
    fn published_where_promised_is_replay_with_the_sweep_done_line() {
        let v = verdict(&findings(configs(0), Some("/rec")));
        assert_eq!(v.word, Some(Word::Replay));
        assert_eq!(v.lines.len(), 1, "{:?}", v.lines);
        assert!(
            v.lines[0].starts_with("sweep done in 1.50s on 2 devices"),
            "{:?}",
            v.lines
        );
        assert!(
            v.lines[0].contains("1 kernels / 12 configs -> /rec/mm.json"),
            "{:?}",
            v.lines
        );
    }

    #[test]
    fn nothing_recovered_is_live_and_blames_a_missing_harness_when_shards_ran_to_the_end() {
        let v = verdict(&findings(Merged::Nothing { recovered: Some(0) }, None));
        assert_eq!(v.word, Some(Word::Live));
        assert!(
            v.lines[0].starts_with("no configs recovered: 2 shard(s) ran to the end"),
            "{:?}",
            v.lines
        );
        let mut f = findings(Merged::Nothing { recovered: Some(0) }, None);
        f.ok = 0;
        let v = verdict(&f);
        assert_eq!(v.word, Some(Word::Live));
        assert!(
            v.lines[0].starts_with("no configs recovered in 1.50s"),
            "{:?}",
            v.lines
        );
    }

    #[test]
    fn a_failed_merge_or_publish_is_live() {
        let v = verdict(&findings(Merged::Failed, None));
        assert_eq!(v.word, Some(Word::Live));
        assert!(v.lines[0].starts_with("merging the shards' records failed"));
        let v = verdict(&findings(configs(0), None));
        assert_eq!(v.word, Some(Word::Live));
        assert!(v.lines[0].starts_with("publishing the merged configs failed"));
    }

    #[test]
    fn failed_shards_and_conflicts_are_warnings_and_still_replay() {
        let mut f = findings(configs(3), Some("/rec"));
        f.failed = vec![(1, "/s/w1/worker.log".into())];
        let v = verdict(&f);
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
        let v = verdict(&findings(configs(0), Some("/elsewhere")));
        assert_eq!(v.word, None);
        assert!(v
            .lines
            .last()
            .expect("a line")
            .contains("not to /rec where the measurement looks"));
        let mut late = findings(configs(0), Some("/elsewhere"));
        late.publish_dir = None; // no measurement waits: nothing was promised
        assert_eq!(verdict(&late).word, Some(Word::Replay));
    }
}
