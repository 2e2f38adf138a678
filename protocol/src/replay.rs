//! The replay environment as `warmup-publish --format json` prints it (docs/CONTRACT.md,
//! "warmup-publish"): `{"unset": [...], "set": {...}, "file": ...}`. One type for the writer and
//! for `warmup-spawn --measure`, which reads where the configs went from it; one list of what it
//! sets ([`exports`]) for every format.

use crate::env::{CURRENT_OP, RECORD_DIR, REPLAY_DIR};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The environment change for the replay run, and the record file published.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayEnv {
    pub unset: Vec<String>,
    pub set: BTreeMap<String, String>,
    pub file: String,
}

/// What the replay run gets set, in order: the replay variable to `dir`, then the op's variable
/// to `op` where the op is known, so that the run reads `<op>.json` without naming the op itself.
pub fn exports<'a>(
    dir: &'a [u8],
    op: Option<&'a str>,
) -> impl Iterator<Item = (&'static str, &'a [u8])> {
    std::iter::once((REPLAY_DIR, dir)).chain(op.map(|op| (CURRENT_OP, op.as_bytes())))
}

impl ReplayEnv {
    /// The record variable unset, [`exports`] set (`dir`, and `op` where known), `file`
    /// published there.
    pub fn new(dir: &str, op: Option<&str>, file: &str) -> ReplayEnv {
        let set = exports(dir.as_bytes(), op)
            .map(|(name, value)| (name.to_owned(), String::from_utf8_lossy(value).into_owned()))
            .collect();
        ReplayEnv {
            unset: vec![RECORD_DIR.to_owned()],
            set,
            file: file.to_owned(),
        }
    }

    /// The JSON text, pretty-printed, with a final newline.
    pub fn to_json(&self) -> serde_json::Result<Vec<u8>> {
        let mut out = serde_json::to_vec_pretty(self)?;
        out.push(b'\n');
        Ok(out)
    }

    /// The replay folder in `text`; `None` where it is not this JSON.
    pub fn replay_dir(text: &[u8]) -> Option<PathBuf> {
        let env: ReplayEnv = serde_json::from_slice(text).ok()?;
        env.set.get(REPLAY_DIR).map(PathBuf::from)
    }
}

/// The replay environment for `dir` (and `op` where known) as sh lines for `eval`
/// (`warmup-publish --format sh`, and what `warmup-spawn --finish` prints), quoted by the shell
/// rule `warmup-spawn --dry-run` uses.
pub fn sh(dir: &[u8], op: Option<&str>) -> Vec<u8> {
    let mut out = format!("unset {RECORD_DIR}\n").into_bytes();
    for (name, value) in exports(dir, op) {
        out.extend_from_slice(format!("export {name}=").as_bytes());
        out.extend(toolkit::shell::quote_bytes(value));
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_replay_folder_reads_back_from_the_text_written() {
        let text = ReplayEnv::new("/r d", None, "/r d/mm.json")
            .to_json()
            .expect("json");
        assert_eq!(ReplayEnv::replay_dir(&text), Some(PathBuf::from("/r d")));
        assert_eq!(
            String::from_utf8_lossy(&text),
            "{\n  \"unset\": [\n    \"FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR\"\n  ],\n  \"set\": {\n    \
             \"FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR\": \"/r d\"\n  },\n  \"file\": \"/r d/mm.json\"\n}\n"
        );
        assert_eq!(ReplayEnv::replay_dir(b"{}"), None);
    }

    #[test]
    fn a_known_op_is_set_beside_the_replay_folder_in_json_and_sh() {
        let env = ReplayEnv::new("/r", Some("mm"), "/r/mm.json");
        assert_eq!(env.set[CURRENT_OP], "mm");
        assert_eq!(env.set[REPLAY_DIR], "/r");
        let lines = String::from_utf8(sh(b"/r d", Some("it's"))).expect("utf-8");
        assert_eq!(
            lines,
            "unset FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR\n\
             export FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR='/r d'\n\
             export FLAGGEMS_PERF_CURRENT_OP='it'\\''s'\n"
        );
        let unknown = String::from_utf8(sh(b"/r", None)).expect("utf-8");
        assert!(!unknown.contains(CURRENT_OP), "{unknown}");
    }
}
