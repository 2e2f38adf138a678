//! `SCRATCH/w<i>/status.json`: how one shard ended, written by warmup-spawn once nothing of the
//! child is left and read by warmup-costs; and [`Outcome`], the one rule that turns a status into
//! the word a run summary says (`ok`, `failed`, `timed_out`, `stopped`, `not_started`), used by
//! warmup-spawn's summary, warmup-costs and warmup-merge's (the finishing job's) alike.
//! docs/CONTRACT.md ("File formats", `status.json`; "Run summaries") is the promise.

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The environment changes a child gets on top of the spawner's own environment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvChanges {
    /// Variables set, in the order they are applied.
    #[serde(with = "ordered_map")]
    pub set: Vec<(String, String)>,
    /// Variables removed.
    pub unset: Vec<String>,
}

impl EnvChanges {
    /// Applies the changes to the environment `cmd` will start with: the removals, then `set` in
    /// its order.
    pub fn apply(&self, cmd: &mut std::process::Command) {
        for var in &self.unset {
            cmd.env_remove(var);
        }
        for (k, v) in &self.set {
            cmd.env(k, v);
        }
    }
}

/// `set` as a JSON object in its own order (a map type would sort or lose it).
mod ordered_map {
    use serde::de::{MapAccess, Visitor};
    use serde::ser::SerializeMap;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(pairs: &[(String, String)], s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(pairs.len()))?;
        for (k, v) in pairs {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, String)>, D::Error> {
        struct Pairs;
        impl<'de> Visitor<'de> for Pairs {
            type Value = Vec<(String, String)>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of variable names to values")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(pair) = map.next_entry()? {
                    out.push(pair);
                }
                Ok(out)
            }
        }
        d.deserialize_map(Pairs)
    }
}

/// One shard's outcome. `exit_code` and `signal` are both null only when the child could not be
/// started at all (`error` says why).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardStatus {
    pub shard: usize,
    pub device: String,
    pub pid: Option<u32>,
    pub exit_code: Option<i32>,
    /// The signal number that ended the child, e.g. 15.
    pub signal: Option<i32>,
    /// The signal's name, e.g. `SIGTERM`.
    pub signal_name: Option<String>,
    /// Stopped because it ran past `--timeout`.
    pub timed_out: bool,
    /// Stopped because warmup-spawn itself was told to stop.
    pub interrupted: bool,
    /// RFC 3339, UTC, milliseconds.
    pub started_at: String,
    /// Wall time from start until the child exited.
    pub seconds: f64,
    pub argv: Vec<String>,
    pub env: EnvChanges,
    pub log: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What became of a shard, as every run summary and every tool counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Exited 0, within its time, and was not cut short.
    Ok,
    /// Exited non-zero, was killed by a signal of its own making, or could not start.
    Failed,
    TimedOut,
    /// Cut short because warmup-spawn was told to stop, whatever the child then exited with.
    Stopped,
    /// No status: the shard never started.
    NotStarted,
}

impl Outcome {
    pub const ALL: [Outcome; 5] = [
        Outcome::Ok,
        Outcome::Failed,
        Outcome::TimedOut,
        Outcome::Stopped,
        Outcome::NotStarted,
    ];

    /// The outcome of a shard with this status, `None` meaning no status file: the one rule.
    pub fn of(status: Option<&ShardStatus>) -> Outcome {
        let Some(s) = status else {
            return Outcome::NotStarted;
        };
        if s.error.is_some() {
            // Could not be started: nothing ran, however it was stopped.
            Outcome::Failed
        } else if s.timed_out {
            Outcome::TimedOut
        } else if s.interrupted {
            // A child that exits 0 on SIGTERM was still cut short.
            Outcome::Stopped
        } else if s.exit_code == Some(0) {
            Outcome::Ok
        } else {
            Outcome::Failed
        }
    }

    /// The outcome of the shard whose status file is at `path` ([`ShardStatus::read`], no file
    /// meaning not started).
    pub fn at(path: &Path) -> Result<Outcome> {
        Ok(Outcome::of(ShardStatus::read(path)?.as_ref()))
    }

    /// The outcome a run summary's word names; `None` for any other word.
    pub fn of_word(word: &str) -> Option<Outcome> {
        Outcome::ALL.into_iter().find(|o| o.word() == word)
    }

    /// The word for it in a run summary (docs/CONTRACT.md, "Run summaries").
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Failed => "failed",
            Outcome::TimedOut => "timed_out",
            Outcome::Stopped => "stopped",
            Outcome::NotStarted => "not_started",
        }
    }
}

impl ShardStatus {
    /// [`Outcome::of`] this status.
    pub fn outcome(&self) -> Outcome {
        Outcome::of(Some(self))
    }

    /// Ran to a good end: [`Outcome::Ok`].
    pub fn ok(&self) -> bool {
        self.outcome() == Outcome::Ok
    }

    /// Reads the status file at `path`; `None` when there is none (the shard never started).
    pub fn read(path: &Path) -> Result<Option<ShardStatus>> {
        let text = match toolkit::file::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let status: ShardStatus = serde_json::from_str(&text).with_context(|| {
            format!(
                "{}: not a status file warmup-spawn wrote; run the shards again",
                path.display()
            )
        })?;
        if !(status.seconds.is_finite() && status.seconds >= 0.0) {
            bail!(
                "{}: \"seconds\" is {}, not a wall time; run the shards again with warmup-spawn",
                path.display(),
                status.seconds
            );
        }
        Ok(Some(status))
    }

    /// Writes the status file at `path` atomically.
    pub fn write(&self, path: &Path) -> Result<()> {
        toolkit::atomic::write_json(path, self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status() -> ShardStatus {
        ShardStatus {
            shard: 0,
            device: "0".into(),
            pid: Some(7),
            exit_code: Some(0),
            signal: None,
            signal_name: None,
            timed_out: false,
            interrupted: false,
            started_at: "2024-01-01T00:00:00.000Z".into(),
            seconds: 1.5,
            argv: vec!["pytest".into()],
            env: EnvChanges {
                set: vec![("B".into(), "1".into()), ("A".into(), "2".into())],
                unset: vec!["C".into()],
            },
            log: "/s/w0/worker.log".into(),
            error: None,
        }
    }

    #[test]
    fn one_rule_for_every_outcome_and_interrupted_is_stopped_whatever_the_exit() {
        let with = |f: fn(&mut ShardStatus)| {
            let mut s = status();
            f(&mut s);
            s.outcome()
        };
        assert_eq!(with(|_| {}), Outcome::Ok);
        assert_eq!(with(|s| s.interrupted = true), Outcome::Stopped);
        assert_eq!(
            with(|s| {
                s.interrupted = true;
                s.exit_code = None;
                s.signal = Some(15);
            }),
            Outcome::Stopped
        );
        assert_eq!(with(|s| s.timed_out = true), Outcome::TimedOut);
        assert_eq!(with(|s| s.exit_code = Some(1)), Outcome::Failed);
        assert_eq!(
            with(|s| {
                s.exit_code = None;
                s.interrupted = true;
                s.error = Some("no such file".into());
            }),
            Outcome::Failed
        );
        assert_eq!(Outcome::of(None), Outcome::NotStarted);
        assert!(!with_ok(true) && with_ok(false));
    }

    fn with_ok(interrupted: bool) -> bool {
        let mut s = status();
        s.interrupted = interrupted;
        s.ok()
    }

    #[test]
    fn a_status_reads_back_as_written_with_env_in_its_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("status.json");
        status().write(&path).expect("write");
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(
            text.contains("\"set\": {\n      \"B\": \"1\",\n      \"A\": \"2\""),
            "{text}"
        );
        assert!(!text.contains("error"), "{text}");
        assert_eq!(ShardStatus::read(&path).expect("read"), Some(status()));
        assert_eq!(
            ShardStatus::read(&dir.path().join("none")).expect("missing"),
            None
        );
    }

    #[test]
    fn a_torn_status_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("status.json");
        std::fs::write(&path, r#"{"exit_code": 0, "seco"#).expect("torn");
        let err = format!("{:#}", ShardStatus::read(&path).expect_err("torn"));
        assert!(
            err.contains("status.json") && err.contains("run the shards again"),
            "{err}"
        );
    }
}
