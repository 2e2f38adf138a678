//! An op's history in a record folder: what an earlier sweep left beside the published record,
//! `DIR/<op>.meta.json` (the harness's sidecar, published by warmup-publish: versions, device,
//! each key's tuning seconds, the children's start-up and compile seconds) and
//! `DIR/<op>.costs.json` (a cost file, written by `warmup-costs --record-dir DIR SCRATCH` after
//! the sweep). warmup-shard balances by its costs (`--history`) and `warmup-costs --predict`
//! decides from it whether a warmup pays.
//!
//! A history is used only when it was made on the Triton version and the device model of this
//! run (`probe`): another Triton compiles other kernels, another GPU times them differently. The
//! cost file holds the last sweep's costs of the op only (each sweep replaces them), so it always
//! describes the same run as the sidecar published with it.

use crate::probe::Here;
use crate::CostFile;
use anyhow::{Context, Result};
use protocol::layout::Scratch;
use protocol::plan::Plan;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The harness's sidecar format and the version this build reads.
const FORMAT: &str = "warmup-harness-meta";
const VERSION: u64 = 1;

/// `DIR/<op>.costs.json`: the op's costs, as the last sweep measured them.
pub fn costs_path(dir: &Path, op: &str) -> PathBuf {
    dir.join(format!("{op}.costs.json"))
}

/// `DIR/<op>.meta.json`: the sidecar of the published record `DIR/<op>.json`.
pub fn meta_path(dir: &Path, op: &str) -> PathBuf {
    dir.join(format!("{op}.meta.json"))
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
    /// A child's start-up (interpreter start to first test); several figures: their mean.
    pub startup_seconds: Option<f64>,
    /// The children's compile seconds; several figures: their sum.
    pub compile_seconds: Option<f64>,
}

impl Meta {
    /// Reads the sidecar at `path`; `Err` says why it cannot be used.
    pub fn load(path: &Path) -> std::result::Result<Meta, String> {
        let name = path.display();
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(format!("no {name}"));
            }
            Err(e) => return Err(format!("{name} cannot be read ({e})")),
        };
        let doc: Value =
            serde_json::from_slice(&bytes).map_err(|e| format!("{name} is not JSON ({e})"))?;
        if doc.get("format").and_then(Value::as_str) != Some(FORMAT) {
            return Err(format!("{name} is not a {FORMAT} file"));
        }
        if doc.get("version").and_then(Value::as_u64) != Some(VERSION) {
            return Err(format!(
                "{name} is sidecar version {}, this build reads {VERSION}",
                doc.get("version").unwrap_or(&Value::Null)
            ));
        }
        let text = |field: &str| {
            doc.get(field)
                .and_then(Value::as_str)
                .map(str::trim)
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
                if let Some(s) = seconds.as_f64().filter(|s| s.is_finite() && *s >= 0.0) {
                    tune_seconds += s;
                    keys += 1;
                }
            }
        }
        Ok(Meta {
            path: path.to_path_buf(),
            triton: text("triton"),
            device: text("device"),
            tune_seconds,
            keys,
            startup_seconds: doc.get("startup_seconds").and_then(|v| figures(v, true)),
            compile_seconds: doc.get("compile_seconds").and_then(|v| figures(v, false)),
        })
    }

    /// Why this sidecar's run is not this one (`None`: same Triton, same device model).
    pub fn mismatch(&self, here: &Here) -> Option<String> {
        let differs = |what: &str, then: &Option<String>, now: &Option<String>| match (then, now) {
            (Some(a), Some(b)) if a == b => None,
            (then, now) => Some(format!(
                "{} was made on {what} {}, this run's is {}",
                self.path.display(),
                then.as_deref()
                    .map_or("unknown".into(), |v| format!("{v:?}")),
                now.as_deref()
                    .map_or("unknown".into(), |v| format!("{v:?}")),
            )),
        };
        differs("Triton", &self.triton, &here.triton)
            .or_else(|| differs("device", &self.device, &here.device))
    }
}

/// A number of seconds, or several (a list, or an object of them): their mean or their sum.
fn figures(value: &Value, mean: bool) -> Option<f64> {
    let ok = |v: &Value| v.as_f64().filter(|s| s.is_finite() && *s >= 0.0);
    let many: Vec<f64> = match value {
        Value::Array(items) => items.iter().filter_map(ok).collect(),
        Value::Object(items) => items.values().filter_map(ok).collect(),
        one => return ok(one),
    };
    if many.is_empty() {
        return None;
    }
    let sum: f64 = many.iter().sum();
    Some(if mean { sum / many.len() as f64 } else { sum })
}

/// A usable history: the sidecar, and the op's measured costs by shape text.
#[derive(Debug)]
pub struct History {
    pub meta: Meta,
    pub costs: CostFile,
}

/// The op's history in `dir`, when it was made on this run's Triton and device model (`here`,
/// asked only once there is a sidecar to compare with); else why it cannot be used, for a line
/// on stderr.
pub fn find(
    dir: &Path,
    op: &str,
    here: impl FnOnce() -> Here,
) -> std::result::Result<History, String> {
    let meta = Meta::load(&meta_path(dir, op))?;
    if let Some(why) = meta.mismatch(&here()) {
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

/// The mean of the `startup_seconds` the plan's children wrote in their sidecars
/// (`SCRATCH/w<i>/rec/<op>.meta.json`), where any did.
pub fn startup(plan: &Plan, scratch: &Scratch) -> Option<f64> {
    let found: Vec<f64> = (0..plan.shards.len())
        .filter_map(|i| Meta::load(&meta_path(&scratch.record_dir(i), &plan.op)).ok())
        .filter_map(|m| m.startup_seconds)
        .collect();
    (!found.is_empty()).then(|| found.iter().sum::<f64>() / found.len() as f64)
}

/// Writes this sweep's costs of `op` into `DIR/<op>.costs.json`, replacing the op's earlier ones
/// (other ops in the file are kept); returns the file's path.
pub fn keep(dir: &Path, op: &str, costs: &[(String, f64)]) -> Result<PathBuf> {
    let path = costs_path(dir, op);
    let mut file = match CostFile::load_or_new(&path)? {
        earlier if earlier.costs(op).is_empty() => earlier,
        _ => {
            // Parsed again without the op, so that none of its earlier costs survive.
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading cost file {}", path.display()))?;
            let mut doc: serde_json::Map<String, Value> = serde_json::from_str(&text)
                .with_context(|| format!("reading cost file {}", path.display()))?;
            doc.remove(op);
            CostFile::parse(&path, &serde_json::to_string(&doc)?)?
        }
    };
    for (text, seconds) in costs {
        file.set(op, text, *seconds);
    }
    file.save()
        .with_context(|| format!("writing cost file {}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn here(triton: Option<&str>, device: Option<&str>) -> Here {
        Here {
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
    fn a_sidecar_gives_the_tuning_sum_and_the_start_up_and_compile_figures() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = sidecar(
            dir.path(),
            r#", "startup_seconds": [8, 10], "compile_seconds": {"0": 3, "1": 4}"#,
        );
        let meta = Meta::load(&path).expect("meta");
        assert_eq!((meta.tune_seconds, meta.keys), (4.0, 2));
        assert_eq!(meta.startup_seconds, Some(9.0));
        assert_eq!(meta.compile_seconds, Some(7.0));
        let one = Meta::load(&sidecar(dir.path(), r#", "startup_seconds": 8.5"#)).expect("meta");
        assert_eq!(
            (one.startup_seconds, one.compile_seconds),
            (Some(8.5), None)
        );
    }

    #[test]
    fn another_triton_another_device_or_an_unknown_one_does_not_match() {
        let dir = tempfile::tempdir().expect("tempdir");
        let meta = Meta::load(&sidecar(dir.path(), "")).expect("meta");
        assert_eq!(
            meta.mismatch(&here(Some("3.6.0"), Some("NVIDIA H200"))),
            None
        );
        let why = meta
            .mismatch(&here(Some("3.5.1"), Some("NVIDIA H200")))
            .expect("mismatch");
        assert!(
            why.contains("Triton \"3.6.0\", this run's is \"3.5.1\""),
            "{why}"
        );
        let why = meta.mismatch(&here(Some("3.6.0"), None)).expect("mismatch");
        assert!(
            why.contains("device \"NVIDIA H200\", this run's is unknown"),
            "{why}"
        );
        assert!(meta.mismatch(&here(None, Some("NVIDIA H200"))).is_some());
    }

    #[test]
    fn keeping_costs_replaces_the_ops_earlier_ones_and_keeps_other_ops() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = costs_path(dir.path(), "mm");
        std::fs::write(&path, r#"{"bmm": {"[1]": 4}, "mm": {"[9]": 9, "[1]": 1}}"#).expect("w");
        keep(
            dir.path(),
            "mm",
            &[("[1]".into(), 2.0), ("[2]".into(), 3.0)],
        )
        .expect("keep");
        let got: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
        assert_eq!(
            got,
            serde_json::json!({"bmm": {"[1]": 4}, "mm": {"[1]": 2.0, "[2]": 3.0}})
        );
    }
}
