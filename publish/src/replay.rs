//! The environment change for the replay run: the record variable unset, the replay variable
//! pointing at the published folder and, where the op was given, the op's variable naming it,
//! written for `eval` in sh, for a Makefile, or as JSON. Each writer either carries every value
//! exactly or refuses, before anything is published.

use anyhow::{bail, Result};
use protocol::env::{RECORD_DIR, REPLAY_DIR};
use protocol::replay::exports;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// How to print the environment change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// `unset` and `export` lines for `eval "$(warmup-publish ...)"`
    Sh,
    /// A fragment for `include` or `$(eval $(file <FRAGMENT))`
    Make,
    /// `{"unset": [...], "set": {...}, "file": ...}`
    Json,
}

/// The text to print for `dir` (absolute), whose record file is `file`, and `op` where it was
/// given.
pub fn render(format: Format, dir: &Path, op: Option<&str>, file: &Path) -> Result<Vec<u8>> {
    match format {
        Format::Sh => Ok(sh(dir.as_os_str().as_bytes(), op)),
        Format::Make => make(dir.as_os_str().as_bytes(), op),
        Format::Json => json(dir, op, file),
    }
}

use protocol::replay::sh;

/// `unexport` for the record variable, `export NAME := VALUE` for each of [`exports`].
fn make(dir: &[u8], op: Option<&str>) -> Result<Vec<u8>> {
    let mut out = format!("unexport {RECORD_DIR}\n").into_bytes();
    for (name, value) in exports(dir, op) {
        out.extend_from_slice(format!("export {name} := ").as_bytes());
        out.extend(make_value(name, value)?);
        out.push(b'\n');
    }
    Ok(out)
}

/// `$` doubles, `#` (and the backslashes before it) is escaped; a newline, carriage return or
/// trailing backslash cannot be carried by a make assignment, so those values are refused.
fn make_value(name: &str, value: &[u8]) -> Result<Vec<u8>> {
    if value.iter().any(|b| matches!(b, b'\n' | b'\r')) || value.ends_with(b"\\") {
        let (what, other) = if name == REPLAY_DIR {
            ("a path", "another --record-dir")
        } else {
            ("an op", "another --op")
        };
        bail!(
            "{}: make cannot carry {what} with a newline, carriage return or trailing backslash; \
             use --format sh or json, or {other}",
            String::from_utf8_lossy(value).escape_debug()
        );
    }
    let mut out = Vec::with_capacity(value.len());
    let mut backslashes = 0;
    for &b in value {
        match b {
            b'$' => out.extend_from_slice(b"$$"),
            b'#' => {
                // make halves the backslashes before a `#` and needs an odd count to keep it.
                out.extend(std::iter::repeat_n(b'\\', backslashes + 1));
                out.push(b'#');
            }
            _ => out.push(b),
        }
        backslashes = if b == b'\\' { backslashes + 1 } else { 0 };
    }
    Ok(out)
}

fn json(dir: &Path, op: Option<&str>, file: &Path) -> Result<Vec<u8>> {
    let (Some(dir), Some(file)) = (dir.to_str(), file.to_str()) else {
        bail!(
            "{}: JSON cannot carry a path that is not UTF-8; use --format sh or make",
            dir.display()
        );
    };
    Ok(protocol::replay::ReplayEnv::new(dir, op, file).to_json()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sh_quotes_single_quotes() {
        let out = String::from_utf8(sh(b"/a b/it's", None)).expect("utf-8");
        assert!(out.ends_with("='/a b/it'\\''s'\n"), "{out}");
        let plain = String::from_utf8(sh(b"/tmp/rec", None)).expect("utf-8");
        assert!(plain.ends_with("=/tmp/rec\n"), "{plain}");
        assert!(out.starts_with("unset FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR\n"));
    }

    #[test]
    fn make_doubles_dollars_and_escapes_hashes() {
        let out = String::from_utf8(make(b"/a$b/c#d/e\\#f", None).expect("make")).expect("utf-8");
        assert!(out.ends_with(" := /a$$b/c\\#d/e\\\\\\#f\n"), "{out}");
        let op = String::from_utf8(make(b"/r", Some("m$m#")).expect("make")).expect("utf-8");
        assert!(
            op.ends_with("export FLAGGEMS_PERF_CURRENT_OP := m$$m\\#\n"),
            "{op}"
        );
    }

    #[test]
    fn make_refuses_a_newline() {
        assert!(make(b"/a\nb", None).is_err());
        assert!(make(b"/a\\", None).is_err());
        let op = make(b"/r", Some("m\nm")).expect_err("an op with a newline");
        assert!(op.to_string().contains("another --op"), "{op}");
    }
}
