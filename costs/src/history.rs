//! What warmup-costs reads from and writes to an op's history (`protocol::history`, where the
//! reading both warmup-shard and warmup-costs need lives): the children's own start-up figures,
//! the default `--startup`, and `--record-dir DIR`, this sweep's costs kept as
//! `DIR/<op>.costs.json` beside the records.

use crate::TOOL;
use anyhow::{Context, Result};
use protocol::costs::{target_of, CostFile};
use protocol::history::{costs_path, meta_path, Meta};
use protocol::layout::Scratch;
use protocol::shard_plan::ShardPlan;
use std::path::{Path, PathBuf};

/// The mean of the `startup_seconds` the plan's children wrote in their sidecars
/// (`SCRATCH/w<i>/rec/<op>.meta.json`), where any did.
pub fn startup(plan: &ShardPlan, scratch: &Scratch) -> Option<f64> {
    let found: Vec<f64> = (0..plan.shards.len())
        .filter_map(|i| Meta::load(&meta_path(&scratch.record_dir(i), &plan.op)).ok())
        .filter_map(|m| m.startup_seconds)
        .collect();
    (!found.is_empty()).then(|| found.iter().sum::<f64>() / found.len() as f64)
}

/// Writes this sweep's costs of `op` into `DIR/<op>.costs.json`, replacing the op's earlier ones
/// (other ops in the file are kept), as `--costs` writes its file: read, changed and replaced
/// under the update lock beside it (beside the file a symlink leads to, which is written
/// through); returns the file's path.
pub fn keep(dir: &Path, op: &str, costs: &[(String, f64)]) -> Result<PathBuf> {
    let path = costs_path(dir, op);
    let _update = toolkit::lock::update_lock(TOOL, &target_of(&path)?)?;
    let mut file = CostFile::load_or_new(&path)?;
    file.clear(op);
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

    fn costs_of(path: &Path, op: &str) -> Vec<(String, f64)> {
        let file = CostFile::load(path).expect("load");
        let mut got: Vec<(String, f64)> = file
            .costs(op)
            .into_iter()
            .map(|(t, c)| (t.to_owned(), c))
            .collect();
        got.sort_by(|a, b| a.0.cmp(&b.0));
        got
    }

    fn costs(list: &[(&str, f64)]) -> Vec<(String, f64)> {
        list.iter().map(|(t, c)| ((*t).to_owned(), *c)).collect()
    }

    #[test]
    fn keeping_costs_replaces_the_ops_earlier_ones_and_keeps_other_ops() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = costs_path(dir.path(), "mm");
        std::fs::write(&path, r#"{"bmm": {"[1]": 4}, "mm": {"[9]": 9, "[1]": 1}}"#).expect("w");
        keep(dir.path(), "mm", &costs(&[("[1]", 2.0), ("[2]", 3.0)])).expect("keep");
        assert_eq!(costs_of(&path, "mm"), costs(&[("[1]", 2.0), ("[2]", 3.0)]));
        assert_eq!(costs_of(&path, "bmm"), costs(&[("[1]", 4.0)]));
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(text.find("bmm") < text.find("\"mm\""), "order kept: {text}");
        assert!(dir.path().join(".mm.costs.json.lock").is_file());
    }

    #[test]
    fn a_kept_cost_file_that_is_a_symlink_is_written_through_and_stays_a_link() {
        let dir = tempfile::tempdir().expect("tempdir");
        let elsewhere = tempfile::tempdir().expect("tempdir");
        let target = elsewhere.path().join("mm-costs.json");
        std::fs::write(&target, r#"{"mm": {"[9]": 9}}"#).expect("w");
        let link = costs_path(dir.path(), "mm");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        keep(dir.path(), "mm", &costs(&[("[1]", 2.0)])).expect("keep");
        assert!(link.symlink_metadata().expect("meta").is_symlink());
        assert_eq!(costs_of(&target, "mm"), costs(&[("[1]", 2.0)]));
        assert!(elsewhere.path().join(".mm-costs.json.lock").is_file());
    }
}
