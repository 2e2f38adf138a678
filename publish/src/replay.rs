//! The environment change for the replay run: the record variable unset and the replay variable
//! pointing at the published folder, written for `eval` in sh, for a Makefile, or as JSON.
//! Each writer either carries the path exactly or refuses, before anything is published.

use anyhow::{bail, Result};
use protocol::env::{RECORD_DIR, REPLAY_DIR};
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

/// The text to print for `dir` (absolute), whose record file is `file`.
pub fn render(format: Format, dir: &Path, file: &Path) -> Result<Vec<u8>> {
    match format {
        Format::Sh => Ok(sh(dir.as_os_str().as_bytes())),
        Format::Make => make(dir.as_os_str().as_bytes()),
        Format::Json => json(dir, file),
    }
}

use protocol::replay::sh;

/// `$` doubles, `#` (and the backslashes before it) is escaped; a newline, carriage return or
/// trailing backslash cannot be carried by a make assignment, so those paths are refused.
fn make(path: &[u8]) -> Result<Vec<u8>> {
    if path.iter().any(|b| matches!(b, b'\n' | b'\r')) || path.ends_with(b"\\") {
        bail!(
            "{}: make cannot carry a path with a newline, carriage return or trailing backslash; \
             use --format sh or json, or another --record-dir",
            String::from_utf8_lossy(path).escape_debug()
        );
    }
    let mut out = format!("unexport {RECORD_DIR}\nexport {REPLAY_DIR} := ").into_bytes();
    let mut backslashes = 0;
    for &b in path {
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
    out.push(b'\n');
    Ok(out)
}

fn json(dir: &Path, file: &Path) -> Result<Vec<u8>> {
    let (Some(dir), Some(file)) = (dir.to_str(), file.to_str()) else {
        bail!(
            "{}: JSON cannot carry a path that is not UTF-8; use --format sh or make",
            dir.display()
        );
    };
    Ok(protocol::replay::ReplayEnv::new(dir, file).to_json()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sh_quotes_single_quotes() {
        let out = String::from_utf8(sh(b"/a b/it's")).expect("utf-8");
        assert!(out.ends_with("='/a b/it'\\''s'\n"), "{out}");
        let plain = String::from_utf8(sh(b"/tmp/rec")).expect("utf-8");
        assert!(plain.ends_with("=/tmp/rec\n"), "{plain}");
        assert!(out.starts_with("unset FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR\n"));
    }

    #[test]
    fn make_doubles_dollars_and_escapes_hashes() {
        let out = String::from_utf8(make(b"/a$b/c#d/e\\#f").expect("make")).expect("utf-8");
        assert!(out.ends_with(" := /a$$b/c\\#d/e\\\\\\#f\n"), "{out}");
    }

    #[test]
    fn make_refuses_a_newline() {
        assert!(make(b"/a\nb").is_err());
        assert!(make(b"/a\\").is_err());
    }
}
