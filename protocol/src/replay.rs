//! The replay environment as `warmup-publish --format json` prints it (docs/CONTRACT.md,
//! "warmup-publish"): `{"unset": [...], "set": {...}, "file": ...}`. One type for the writer and
//! for `warmup-spawn --measure`, which reads where the configs went from it.

use crate::env::{RECORD_DIR, REPLAY_DIR};
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

impl ReplayEnv {
    /// The record variable unset, the replay variable set to `dir`, `file` published there.
    pub fn new(dir: &str, file: &str) -> ReplayEnv {
        ReplayEnv {
            unset: vec![RECORD_DIR.to_owned()],
            set: BTreeMap::from([(REPLAY_DIR.to_owned(), dir.to_owned())]),
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

/// The replay environment for `dir` as sh lines for `eval` (`warmup-publish --format sh`, and
/// what `warmup-spawn --finish` prints), quoted by the shell rule `warmup-spawn --dry-run` uses.
pub fn sh(dir: &[u8]) -> Vec<u8> {
    let mut out = format!("unset {RECORD_DIR}\nexport {REPLAY_DIR}=").into_bytes();
    out.extend(toolkit::shell::quote_bytes(dir));
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_replay_folder_reads_back_from_the_text_written() {
        let text = ReplayEnv::new("/r d", "/r d/mm.json")
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
}
