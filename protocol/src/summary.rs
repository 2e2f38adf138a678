//! Run summaries (docs/CONTRACT.md, "Run summaries"): what a run did, as lines a shell script
//! reads with `while read -r name rest`, no JSON parser needed. One writer, so that every tool's
//! summary has the same version line, the same separators and the same refusal of paths that
//! would break a line.

use anyhow::{bail, Result};
use std::ffi::{OsStr, OsString};
use std::fmt::Display;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The summary format this build writes.
pub const VERSION: u32 = 1;

/// A summary being built: `version 1`, then one `NAME FIELD...` line per record.
#[derive(Debug, Clone)]
pub struct Summary {
    text: Vec<u8>,
}

impl Default for Summary {
    fn default() -> Self {
        Summary {
            text: format!("{} {VERSION}\n", key::VERSION).into_bytes(),
        }
    }
}

impl Summary {
    pub fn new() -> Self {
        Self::default()
    }

    /// `NAME VALUE`: a count, a number of seconds, a word. A value is one field: no spaces.
    pub fn value(&mut self, name: &str, value: impl Display) -> &mut Self {
        let _ = writeln!(self.text, "{name} {value}");
        self
    }

    /// `NAME [FIELD ...] PATH`: the path is the line's last field, the rest of the line, so it
    /// may hold spaces. A path holding a newline is refused ([`check_path`]).
    pub fn path(&mut self, name: &str, fields: &[&dyn Display], path: &Path) -> Result<&mut Self> {
        check_path(path)?;
        let _ = write!(self.text, "{name} ");
        for field in fields {
            let _ = write!(self.text, "{field} ");
        }
        self.text.extend_from_slice(path.as_os_str().as_bytes());
        self.text.push(b'\n');
        Ok(self)
    }

    /// `NAME REST` for each line of `rest` that is not empty: text for people or a shell
    /// (`warmup-spawn --finish`'s `say`, `env`, `error` lines), so a newline in it starts another
    /// line of the same name and never one a reader would take for another name.
    pub fn lines(&mut self, name: &str, rest: &[u8]) -> &mut Self {
        for line in rest.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let _ = write!(self.text, "{name} ");
            self.text.extend_from_slice(line);
            self.text.push(b'\n');
        }
        self
    }

    /// The summary's text.
    pub fn bytes(&self) -> &[u8] {
        &self.text
    }

    /// Writes the summary to `target`: `-` is stdout, a file is written atomically.
    pub fn write(&self, target: &Path) -> Result<()> {
        if target.as_os_str() == "-" {
            let mut out = std::io::stdout().lock();
            out.write_all(&self.text)
                .and_then(|()| out.flush())
                .map_err(|e| anyhow::Error::new(e).context("writing the summary to stdout"))
        } else {
            toolkit::atomic::write(target, &self.text)
        }
    }
}

/// Refuses a path that a summary line cannot carry (one holding a newline): a tool calls it on
/// every path it will name before it starts, so that the refusal writes nothing.
pub fn check_path(path: &Path) -> Result<()> {
    if path.as_os_str().as_bytes().contains(&b'\n') {
        bail!(
            "{:?}: a path holding a newline cannot be named in a run summary; rename it or drop --summary",
            path
        );
    }
    Ok(())
}

/// The names of the lines, one constant a key, for every writer and every reader
/// (docs/CONTRACT.md, "Run summaries"); the outcome counts are [`crate::status::Outcome::word`]s.
pub mod key {
    /// The first line: the format's version.
    pub const VERSION: &str = "version";
    /// warmup-spawn: the plan's op (the rest of the line).
    pub const OP: &str = "op";
    pub const SHARDS: &str = "shards";
    pub const WALL_SECONDS: &str = "wall_seconds";
    pub const SUMMED_SECONDS: &str = "summed_seconds";
    /// `shard INDEX OUTCOME LOG`, one line a shard (warmup-spawn, warmup-merge).
    pub const SHARD: &str = "shard";
    /// warmup-merge (and `warmup-spawn --measure`).
    pub const INPUTS: &str = "inputs";
    pub const RECOVERED: &str = "recovered";
    pub const KERNELS: &str = "kernels";
    pub const CONFIGS: &str = "configs";
    pub const CONFLICTS: &str = "conflicts";
    pub const MERGED: &str = "merged";
    pub const CONFLICTS_FILE: &str = "conflicts_file";
    /// `warmup-spawn --measure` only.
    pub const PUBLISHED: &str = "published";
    pub const GATE: &str = "gate";
    pub const MEASUREMENT: &str = "measurement";
    pub const MEASUREMENT_STATUS: &str = "measurement_status";
    pub const STOP_SIGNAL: &str = "stop_signal";
    /// `warmup-costs --predict`.
    pub const PLAIN_SECONDS: &str = "plain_seconds";
    pub const WARMUP_SECONDS: &str = "warmup_seconds";
    pub const SAVING: &str = "saving";
    pub const DECISION: &str = "decision";
    pub const STARTUP_SECONDS: &str = "startup_seconds";
    pub const TIMING_SECONDS: &str = "timing_seconds";
    pub const MEASURE_SECONDS: &str = "measure_seconds";
    pub const SWEEP_SECONDS: &str = "sweep_seconds";
    pub const CHILDREN: &str = "children";
    pub const DEVICES: &str = "devices";
    pub const HISTORY: &str = "history";
    /// `warmup-spawn --finish` (its script relays them): a line for people, the shards to run
    /// again (`rerun N LIST`), a line of the replay environment, why it failed.
    pub const SAY: &str = "say";
    pub const RERUN: &str = "rerun";
    pub const ENV: &str = "env";
    pub const ERROR: &str = "error";
}

/// One `shard INDEX OUTCOME LOG` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardLine {
    pub index: usize,
    /// Written as its [`crate::status::Outcome::word`].
    pub outcome: crate::status::Outcome,
    pub log: PathBuf,
}

/// A summary read back, the one reader: each name's fields as the rest of its line (the last one
/// wins where a name repeats), and the `shard` lines in their order. The rest of a line is kept
/// as bytes, so a path that is not UTF-8 reads back as it was written.
#[derive(Debug, Clone, Default)]
pub struct Read {
    fields: Vec<(String, OsString)>,
    pub shards: Vec<ShardLine>,
}

impl Read {
    /// `None` unless `text` is a summary of [`VERSION`].
    pub fn parse(text: &[u8]) -> Option<Read> {
        let mut lines = text.split(|b| *b == b'\n');
        if lines.next()? != format!("{} {VERSION}", key::VERSION).as_bytes() {
            return None;
        }
        let mut read = Read::default();
        for line in lines {
            let Some(space) = line.iter().position(|b| *b == b' ') else {
                continue;
            };
            let name = String::from_utf8_lossy(&line[..space]).into_owned();
            let rest = &line[space + 1..];
            if name == key::SHARD {
                read.shards.extend(shard_line(rest));
            } else {
                read.fields.retain(|(n, _)| *n != name);
                read.fields
                    .push((name, OsStr::from_bytes(rest).to_os_string()));
            }
        }
        Some(read)
    }

    /// The rest of `name`'s line, where it is text.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.raw(name)?.to_str()
    }

    /// The rest of `name`'s line as a path, byte for byte.
    pub fn path(&self, name: &str) -> Option<PathBuf> {
        self.raw(name).map(PathBuf::from)
    }

    /// `name`'s value as a number (a count, seconds).
    pub fn number<T: FromStr>(&self, name: &str) -> Option<T> {
        self.text(name)?.parse().ok()
    }

    fn raw(&self, name: &str) -> Option<&OsStr> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_os_str())
    }
}

/// `INDEX OUTCOME LOG`, the fields after `shard`.
fn shard_line(rest: &[u8]) -> Option<ShardLine> {
    let mut fields = rest.splitn(3, |b| *b == b' ');
    let index = std::str::from_utf8(fields.next()?).ok()?.parse().ok()?;
    let outcome = crate::status::Outcome::of_word(std::str::from_utf8(fields.next()?).ok()?)?;
    let log = PathBuf::from(OsStr::from_bytes(fields.next()?));
    Some(ShardLine {
        index,
        outcome,
        log,
    })
}

/// warmup-merge's run summary, as it writes it and as `warmup-spawn --measure` reads it back: one
/// type for both ends.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergeSummary {
    pub inputs: usize,
    /// Inputs read as record files.
    pub recovered: usize,
    pub kernels: usize,
    pub configs: usize,
    pub conflicts: usize,
    /// The merged record file, when one was written.
    pub merged: Option<PathBuf>,
    /// The conflict list, when one was written.
    pub conflicts_file: Option<PathBuf>,
    /// Each SCRATCH input's shard, with its outcome.
    pub shards: Vec<ShardLine>,
}

impl MergeSummary {
    /// Adds its lines to `summary`: the counts, the files, the shards.
    pub fn add_to(&self, summary: &mut Summary) -> Result<()> {
        summary
            .value(key::INPUTS, self.inputs)
            .value(key::RECOVERED, self.recovered)
            .value(key::KERNELS, self.kernels)
            .value(key::CONFIGS, self.configs)
            .value(key::CONFLICTS, self.conflicts);
        for (name, file) in [
            (key::MERGED, &self.merged),
            (key::CONFLICTS_FILE, &self.conflicts_file),
        ] {
            if let Some(file) = file {
                summary.path(name, &[], file)?;
            }
        }
        for shard in &self.shards {
            summary.path(
                key::SHARD,
                &[&shard.index, &shard.outcome.word()],
                &shard.log,
            )?;
        }
        Ok(())
    }

    /// The summary warmup-merge writes.
    pub fn to_summary(&self) -> Result<Summary> {
        let mut summary = Summary::new();
        self.add_to(&mut summary)?;
        Ok(summary)
    }

    /// Reads back what [`MergeSummary::to_summary`] wrote; `None` when it is not a summary of
    /// this version or a count is missing.
    pub fn read(text: &[u8]) -> Option<MergeSummary> {
        let read = Read::parse(text)?;
        Some(MergeSummary {
            inputs: read.number(key::INPUTS)?,
            recovered: read.number(key::RECOVERED)?,
            kernels: read.number(key::KERNELS)?,
            configs: read.number(key::CONFIGS)?,
            conflicts: read.number(key::CONFLICTS)?,
            merged: read.path(key::MERGED),
            conflicts_file: read.path(key::CONFLICTS_FILE),
            shards: read.shards,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_reads_back_by_name_and_another_version_not_at_all() {
        let mut s = Summary::new();
        s.value("recovered", 3);
        s.path("merged", &[], Path::new("/tmp/a b/merged.json"))
            .expect("no newline");
        s.path("shard", &[&0, &"ok"], Path::new("/tmp/w0/worker.log"))
            .expect("no newline");
        let read = Read::parse(s.bytes()).expect("version 1");
        assert_eq!(read.number::<usize>("recovered"), Some(3));
        assert_eq!(read.text("merged"), Some("/tmp/a b/merged.json"));
        assert_eq!(read.text("shard"), None);
        assert_eq!(
            read.shards,
            [ShardLine {
                index: 0,
                outcome: crate::status::Outcome::Ok,
                log: "/tmp/w0/worker.log".into()
            }]
        );
        assert!(Read::parse(b"version 2\nrecovered 3\n").is_none());
    }

    #[test]
    fn lines_are_name_then_fields_then_the_path_as_the_rest() {
        let mut s = Summary::new();
        s.value("shards", 2);
        s.path("shard", &[&0, &"ok"], Path::new("/tmp/a b/w0/worker.log"))
            .expect("no newline");
        s.path("merged", &[], Path::new("/tmp/m.json"))
            .expect("no newline");
        assert_eq!(
            String::from_utf8_lossy(s.bytes()),
            "version 1\nshards 2\nshard 0 ok /tmp/a b/w0/worker.log\nmerged /tmp/m.json\n"
        );
    }

    #[test]
    fn text_lines_keep_their_name_across_a_newline() {
        let mut s = Summary::new();
        s.lines(key::SAY, b"merged\ninto /r\n");
        assert_eq!(s.bytes(), b"version 1\nsay merged\nsay into /r\n");
    }

    #[test]
    fn a_path_with_a_newline_is_refused() {
        let err = Summary::new()
            .path("merged", &[], Path::new("/tmp/a\nb"))
            .expect_err("newline");
        assert!(format!("{err:#}").contains("newline"), "{err:#}");
    }

    #[test]
    fn a_merge_summary_reads_back_as_written_non_utf8_paths_included() {
        let merge = MergeSummary {
            inputs: 3,
            recovered: 2,
            kernels: 1,
            configs: 12,
            conflicts: 1,
            merged: Some("/s/merged.json".into()),
            conflicts_file: Some(PathBuf::from(OsStr::from_bytes(b"/s/\xff c.json"))),
            shards: vec![ShardLine {
                index: 2,
                outcome: crate::status::Outcome::NotStarted,
                log: "/s/w 2/worker.log".into(),
            }],
        };
        let text = merge.to_summary().expect("no newline");
        assert_eq!(MergeSummary::read(text.bytes()), Some(merge));
        assert_eq!(MergeSummary::read(b"version 1\ninputs 3\n"), None);
    }
}
