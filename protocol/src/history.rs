//! An op's history in a record folder: what an earlier sweep left beside the published record,
//! `DIR/<op>.meta.json` (the harness's sidecar, published by warmup-publish: versions, device,
//! each key's tuning seconds, the longest start-up of its children and the sum of their compile
//! seconds) and `DIR/<op>.costs.json` (a cost file, written by `warmup-costs --record-dir DIR
//! SCRATCH` after the sweep). Here because two tools read it: warmup-shard balances by its costs
//! (`--history`) and `warmup-costs --predict` decides from it whether a warmup pays.
//!
//! A history is used only when it was made on the Triton version and the device model of this
//! run ([`crate::probe`]): another Triton compiles other kernels, another GPU times them
//! differently. The cost file holds the last sweep's costs of the op only (each sweep replaces
//! them), so it always describes the same run as the sidecar published with it.

use crate::costs::CostFile;
use crate::layout::op_file;
use crate::probe::Platform;
use serde_json::Value;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The harness's sidecar format, the version warmup-publish writes (2 added `foreign`: where the
/// keys not made on the sidecar's own `device` and `triton` were made) and those this build reads.
pub const SIDECAR_FORMAT: &str = "warmup-harness-meta";
pub const SIDECAR_VERSION: u64 = 2;
pub const SIDECAR_READS: [u64; 2] = [1, 2];
/// The sidecar's field naming the signature ([`crate::signature`]) of the last run that finished with
/// nothing missing from the record: the evidence a reuse decision needs that the record holds
/// every key that run needs (docs/CONTRACT.md, "The record/replay harness").
pub const COMPLETE_FOR: &str = "complete_for";

/// `DIR/<op>.costs.json`: the op's costs, as the last sweep measured them.
pub fn costs_path(dir: &Path, op: impl AsRef<OsStr>) -> PathBuf {
    op_file(dir, "", op.as_ref(), ".costs.json")
}

/// `DIR/<op>.meta.json`: the sidecar of the record `DIR/<op>.json`.
pub fn meta_path(dir: &Path, op: impl AsRef<OsStr>) -> PathBuf {
    op_file(dir, "", op.as_ref(), ".meta.json")
}

/// `DIR/.<op>.journal`: the keys a record session decided and has not folded into `<op>.json`
/// yet (docs/CONTRACT.md, record mode). The replay pins them too, so a journal left beside a
/// record that something else replaced would override it.
pub fn journal_path(dir: &Path, op: impl AsRef<OsStr>) -> PathBuf {
    op_file(dir, ".", op.as_ref(), ".journal")
}

/// `DIR/.<op>.sessions`: the file every live record session of the op holds a shared lock on
/// (the harness's writer.py), so that warmup-publish and warmup-cache can tell one is live.
pub fn sessions_path(dir: &Path, op: impl AsRef<OsStr>) -> PathBuf {
    op_file(dir, ".", op.as_ref(), ".sessions")
}

/// `DIR/<op>`, the name whose update lock (`DIR/.<op>.lock`, `toolkit::lock::update_lock`) every
/// writer of the op's record holds: the harness's record sessions and warmup-publish.
pub fn record_lock_target(dir: &Path, op: impl AsRef<OsStr>) -> PathBuf {
    let op = op.as_ref();
    dir.join(op)
}

/// What a sidecar says that a decision needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Meta {
    pub path: PathBuf,
    pub triton: Option<String>,
    pub device: Option<String>,
    /// The sum of every key's `tune_seconds` (keys a chosen store answered, `null`, count 0).
    pub tune_seconds: f64,
    /// How many keys have tuning seconds.
    pub keys: usize,
    /// The start-up (interpreter start to first test): a child's own, or, published, the longest
    /// of the shards'.
    pub startup_seconds: Option<f64>,
    /// The compile seconds: a child's own, or, published, the sum of the shards'.
    pub compile_seconds: Option<f64>,
    /// [`COMPLETE_FOR`]: the signature of the last run that finished with nothing missing.
    pub complete_for: Option<String>,
}

impl Meta {
    /// Reads the sidecar at `path`; `Err` says why it cannot be used.
    pub fn load(path: &Path) -> std::result::Result<Meta, String> {
        let name = path.display();
        let bytes = match toolkit::file::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(format!("no {name}"));
            }
            Err(e) => return Err(format!("{name} cannot be read ({e})")),
        };
        let doc: Value =
            serde_json::from_slice(&bytes).map_err(|e| format!("{name} is not JSON ({e})"))?;
        if doc.get("format").and_then(Value::as_str) != Some(SIDECAR_FORMAT) {
            return Err(format!("{name} is not a {SIDECAR_FORMAT} file"));
        }
        if !doc
            .get("version")
            .and_then(Value::as_u64)
            .is_some_and(|v| SIDECAR_READS.contains(&v))
        {
            return Err(format!(
                "{name} is sidecar version {}, this build reads 1 or 2",
                doc.get("version").unwrap_or(&Value::Null)
            ));
        }
        // As the harness compares them: exactly, an empty name being none.
        let text = |field: &str| {
            doc.get(field)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let mut tune_seconds = 0.0;
        let mut keys = 0;
        if let Some(Value::Object(kernels)) = doc.get("tune_seconds") {
            for seconds in kernels
                .values()
                .filter_map(Value::as_object)
                .flat_map(|k| k.values())
            {
                if let Some(s) = seconds_of(seconds) {
                    tune_seconds += s;
                    keys += 1;
                }
            }
        }
        if !tune_seconds.is_finite() {
            return Err(format!(
                "{name}: its {keys} keys' tune_seconds add up past the largest number a sum can \
                 hold, so they say nothing usable"
            ));
        }
        Ok(Meta {
            path: path.to_path_buf(),
            triton: text("triton"),
            device: text("device"),
            tune_seconds,
            keys,
            startup_seconds: doc.get("startup_seconds").and_then(seconds_of),
            compile_seconds: doc.get("compile_seconds").and_then(seconds_of),
            complete_for: text(COMPLETE_FOR),
        })
    }

    /// Why this sidecar's run is not this one (`None`: same Triton, same device model).
    pub fn mismatch(&self, platform: &Platform) -> Option<String> {
        self.differs("Triton", &self.triton, &platform.triton)
            .or_else(|| self.differs("device", &self.device, &platform.device))
    }

    /// Why this sidecar's record cannot be replayed by this run (`None`: it can): another Triton,
    /// or, where both name one, another device model. A device that cannot be named on either
    /// side is no refusal: the harness checks each key against the device it runs on.
    pub fn replay_mismatch(&self, platform: &Platform) -> Option<String> {
        self.differs("Triton", &self.triton, &platform.triton)
            .or_else(|| match (&self.device, &platform.device) {
                (Some(_), Some(_)) => self.differs("device", &self.device, &platform.device),
                _ => None,
            })
    }

    fn differs(&self, what: &str, then: &Option<String>, now: &Option<String>) -> Option<String> {
        let name = |v: &Option<String>| v.as_deref().map_or("unknown".into(), |v| format!("{v:?}"));
        match (then, now) {
            (Some(a), Some(b)) if a == b => None,
            _ => Some(format!(
                "{} was made on {what} {}, this run's is {}",
                self.path.display(),
                name(then),
                name(now),
            )),
        }
    }
}

/// A number of seconds: finite and at least 0; anything else (`null`, text, a list) is none.
fn seconds_of(value: &Value) -> Option<f64> {
    value.as_f64().filter(|s| s.is_finite() && *s >= 0.0)
}

/// A usable history: the sidecar, and the op's measured costs by shape text.
#[derive(Debug)]
pub struct History {
    pub meta: Meta,
    pub costs: CostFile,
}

/// The op's history in `dir`, when it was made on this run's Triton and device model (`platform`,
/// asked only once there is a sidecar to compare with); else why it cannot be used, for a line
/// on stderr.
pub fn find(
    dir: &Path,
    op: &str,
    platform: impl FnOnce() -> Platform,
) -> std::result::Result<History, String> {
    let meta = Meta::load(&meta_path(dir, op))?;
    if let Some(why) = meta.mismatch(&platform()) {
        return Err(why);
    }
    let path = costs_path(dir, op);
    if path.symlink_metadata().is_err() {
        return Err(format!("no {}", path.display()));
    }
    let costs = CostFile::load(&path).map_err(|e| format!("{e:#}"))?;
    if costs.costs(op).is_empty() {
        return Err(format!("{} has no costs for op {op:?}", path.display()));
    }
    Ok(History { meta, costs })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn platform(triton: Option<&str>, device: Option<&str>) -> Platform {
        Platform {
            triton: triton.map(str::to_owned),
            device: device.map(str::to_owned),
        }
    }

    fn sidecar(dir: &Path, extra: &str) -> PathBuf {
        let path = meta_path(dir, "mm");
        let text = format!(
            r#"{{"format": "warmup-harness-meta", "version": 1, "op": "mm",
                "tune_seconds": {{"k": {{"[1]": 2.5, "[2]": null, "[3]": 1.5}}}},
                "triton": "3.6.0", "device": "NVIDIA H200"{extra}}}"#
        );
        std::fs::write(&path, text).expect("write");
        path
    }

    #[test]
    fn a_sidecar_gives_the_tuning_sum_and_the_start_up_and_compile_seconds_as_published() {
        let dir = tempfile::tempdir().expect("tempdir");
        // As warmup-publish writes them: the longest start-up, the summed compiling.
        let path = sidecar(
            dir.path(),
            r#", "startup_seconds": 9.5, "compile_seconds": 7.75"#,
        );
        let meta = Meta::load(&path).expect("meta");
        assert_eq!((meta.tune_seconds, meta.keys), (4.0, 2));
        assert_eq!(
            (meta.startup_seconds, meta.compile_seconds),
            (Some(9.5), Some(7.75))
        );
        // A child's sidecar: nothing compiled ahead is null.
        let child = sidecar(
            dir.path(),
            r#", "startup_seconds": 8.5, "compile_seconds": null"#,
        );
        let one = Meta::load(&child).expect("meta");
        assert_eq!(
            (one.startup_seconds, one.compile_seconds),
            (Some(8.5), None)
        );
    }

    #[test]
    fn tune_seconds_that_overflow_their_sum_are_no_usable_sidecar() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = meta_path(dir.path(), "mm");
        std::fs::write(
            &path,
            r#"{"format": "warmup-harness-meta", "version": 1, "op": "mm",
                "tune_seconds": {"k": {"[1]": 1.7e308, "[2]": 1.7e308}}}"#,
        )
        .expect("write");
        let why = Meta::load(&path).expect_err("an infinite sum");
        assert!(why.contains("add up past the largest number"), "{why}");
    }

    #[test]
    fn a_figure_that_is_not_one_number_of_seconds_is_none() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = sidecar(
            dir.path(),
            r#", "startup_seconds": [8, 10], "compile_seconds": -1"#,
        );
        let meta = Meta::load(&path).expect("meta");
        assert_eq!((meta.startup_seconds, meta.compile_seconds), (None, None));
    }

    #[test]
    fn another_triton_another_device_or_an_unknown_one_does_not_match() {
        let dir = tempfile::tempdir().expect("tempdir");
        let meta = Meta::load(&sidecar(dir.path(), "")).expect("meta");
        assert_eq!(
            meta.mismatch(&platform(Some("3.6.0"), Some("NVIDIA H200"))),
            None
        );
        let why = meta
            .mismatch(&platform(Some("3.5.1"), Some("NVIDIA H200")))
            .expect("mismatch");
        assert!(
            why.contains("Triton \"3.6.0\", this run's is \"3.5.1\""),
            "{why}"
        );
        let why = meta
            .mismatch(&platform(Some("3.6.0"), None))
            .expect("mismatch");
        assert!(
            why.contains("device \"NVIDIA H200\", this run's is unknown"),
            "{why}"
        );
        assert!(meta
            .mismatch(&platform(None, Some("NVIDIA H200")))
            .is_some());
    }
}
