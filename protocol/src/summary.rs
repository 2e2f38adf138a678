//! Run summaries (docs/CONTRACT.md, "Run summaries"): what a run did, as lines a shell script
//! reads with `while read -r name rest`, no JSON parser needed. One writer, so that every tool's
//! summary has the same version line, the same separators and the same refusal of paths that
//! would break a line.

use anyhow::{bail, Result};
use std::fmt::Display;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

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
            text: format!("version {VERSION}\n").into_bytes(),
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

/// A summary read back: each name's line, its fields as the rest of the line (the last one wins
/// where a name repeats; `shard` lines are left out). `None` unless it is [`VERSION`].
pub fn read(text: &[u8]) -> Option<std::collections::HashMap<String, String>> {
    let text = String::from_utf8_lossy(text);
    let mut lines = text.lines();
    if lines.next()? != format!("version {VERSION}") {
        return None;
    }
    Some(
        lines
            .filter_map(|line| line.split_once(' '))
            .filter(|(name, _)| *name != "shard")
            .map(|(name, rest)| (name.to_owned(), rest.to_owned()))
            .collect(),
    )
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
        let read = read(s.bytes()).expect("version 1");
        assert_eq!(read["recovered"], "3");
        assert_eq!(read["merged"], "/tmp/a b/merged.json");
        assert!(!read.contains_key("shard"));
        assert_eq!(super::read(b"version 2\nrecovered 3\n"), None);
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
    fn a_path_with_a_newline_is_refused() {
        let err = Summary::new()
            .path("merged", &[], Path::new("/tmp/a\nb"))
            .expect_err("newline");
        assert!(format!("{err:#}").contains("newline"), "{err:#}");
    }
}
