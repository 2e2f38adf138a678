//! Where the records come from: each INPUT is a record file, or a SCRATCH folder whose plan
//! names one record file per shard. Reading one either yields its `{kernel: {key: config}}`
//! buckets or says why it was skipped, so that a dead shard is reported, not silently dropped.

use anyhow::Result;
use protocol::layout::{Scratch, SHARD_PLAN};
use protocol::lock::ScratchLock;
use protocol::op::OpArg;
use protocol::records::{Records, Unreadable};
use protocol::shard_plan::ShardPlan;
use std::path::{Path, PathBuf};

/// One record file to read, in merge order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub path: PathBuf,
    /// The shard it belongs to when it came from a SCRATCH folder.
    pub shard: Option<usize>,
    /// Where to look when the shard left no usable record: its log and status files.
    pub clues: Option<(PathBuf, PathBuf)>,
    /// A by-key plan's shard: a child that claimed no key records nothing, by design.
    pub by_key: bool,
}

/// The scratch locks a merge holds, one per scratch folder however often it is named.
#[derive(Debug, Default)]
pub struct Locks {
    held: Vec<(PathBuf, ScratchLock)>,
}

impl Locks {
    /// Takes `scratch`'s lock unless this merge holds it already.
    pub fn take(&mut self, scratch: &Scratch) -> Result<()> {
        let root =
            std::fs::canonicalize(scratch.root()).unwrap_or_else(|_| scratch.root().to_path_buf());
        if !self.held.iter().any(|(held, _)| *held == root) {
            let lock = scratch.lock(crate::TOOL)?;
            self.held.push((root, lock));
        }
        Ok(())
    }
}

/// Expands the command line's INPUTs into record files, in order, holding each SCRATCH
/// folder's lock before reading its plan.
///
/// The op given (`--op` or the environment) must be a SCRATCH folder's plan's; the plan
/// supplies it otherwise.
pub fn sources(inputs: &[PathBuf], op: &OpArg, locks: &mut Locks) -> Result<Vec<Source>> {
    let mut out = Vec::new();
    for input in inputs {
        if !input.is_dir() || !input.join(SHARD_PLAN).exists() {
            out.push(Source {
                path: input.clone(),
                shard: None,
                clues: None,
                by_key: false,
            });
            continue;
        }
        let scratch = Scratch::new(input);
        locks.take(&scratch)?;
        let (plan, scratch) = ShardPlan::load(&scratch.shard_plan())?;
        let op = op.for_shard_plan(&plan, &scratch.shard_plan())?;
        out.extend(plan.shards.iter().map(|shard| Source {
            path: scratch.record_file(shard.index, op),
            shard: Some(shard.index),
            clues: Some((scratch.log(shard.index), scratch.status(shard.index))),
            by_key: plan.by_key(),
        }));
    }
    Ok(out)
}

/// Reads one record file the way the plugin's `json.loads(p.read_text())` did; `Err` is the
/// reason it cannot be used.
pub fn read(path: &Path) -> Result<Records, Unreadable> {
    let whole = |reason: String| Unreadable { at: None, reason };
    if path.is_dir() {
        return Err(whole(format!(
            "is a folder without {SHARD_PLAN}: give a record file <op>.json or a SCRATCH folder"
        )));
    }
    let bytes = toolkit::file::read(path).map_err(|e| whole(format!("cannot read: {e}")))?;
    Records::parse(&bytes)
}

/// For each source, the kernels (as JSON texts) whose keys it carried under a stale fingerprint:
/// its shard's sidecar (`<op>.meta.json` beside the record) names for the kernel a fingerprint
/// that no running kernel confirmed (`unchecked`, docs/CONTRACT.md "Resume"), while the shards
/// that ran the kernel agree on another. Those keys were tuned for the kernel as it was: left
/// out, with a line each, and no conflict. A sidecar that cannot be read changes nothing.
pub fn stale_kernels(sources: &[Source]) -> (Vec<Vec<String>>, Vec<String>) {
    use serde_json::Value;
    use std::collections::{BTreeSet, HashSet};
    let mut skip = vec![Vec::new(); sources.len()];
    let mut notes = Vec::new();
    // (kernel, fingerprint, unchecked) per scratch source
    let read: Vec<Vec<(String, String, bool)>> = sources
        .iter()
        .map(|source| {
            let (Some(_), Some(op), Some(dir)) = (
                source.shard,
                source
                    .path
                    .file_name()
                    .and_then(protocol::op::of_record_file),
                source.path.parent(),
            ) else {
                return Vec::new();
            };
            let meta = protocol::history::meta_path(dir, op);
            let Some(Value::Object(doc)) = toolkit::file::read(&meta)
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            else {
                return Vec::new();
            };
            let unchecked: HashSet<&str> = doc
                .get("unchecked")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let Some(Value::Object(kernels)) = doc.get("kernels") else {
                return Vec::new();
            };
            kernels
                .iter()
                .filter_map(|(k, v)| {
                    Some((
                        k.clone(),
                        v.as_str()?.to_owned(),
                        unchecked.contains(k.as_str()),
                    ))
                })
                .collect()
        })
        .collect();
    let names: BTreeSet<&str> = read.iter().flatten().map(|(k, _, _)| k.as_str()).collect();
    for kernel in names {
        let ran: BTreeSet<&str> = read
            .iter()
            .flatten()
            .filter(|(k, _, unchecked)| k == kernel && !unchecked)
            .map(|(_, f, _)| f.as_str())
            .collect();
        let [running] = ran.into_iter().collect::<Vec<_>>()[..] else {
            continue;
        };
        for (i, held) in read.iter().enumerate() {
            if held
                .iter()
                .any(|(k, f, unchecked)| k == kernel && *unchecked && f != running)
            {
                skip[i].push(Value::from(kernel).to_string());
                notes.push(format!(
                    "{}: kernel {kernel}'s keys were carried under the fingerprint it had before \
                     it changed (shard {} never ran it); left out, the shards that ran it tuned \
                     it as it is now",
                    sources[i].path.display(),
                    sources[i].shard.unwrap_or(i)
                ));
            }
        }
    }
    (skip, notes)
}

impl Source {
    /// Why the source's record cannot be used, as the skip line says it: a by-key shard with no
    /// record file tuned no key there (each it met was another child's), or ended first.
    pub fn unusable(&self, why: &Unreadable) -> String {
        let name = self.path.display().to_string();
        match self.shard {
            Some(shard) if self.by_key && !self.path.exists() => format!(
                "{name}: no record: by key, shard {shard} tuned no key (another child claimed \
                 each it met) or ended before recording one"
            ),
            _ => why.located(&name),
        }
    }

    /// ` (shard i: see LOG and STATUS)` for a shard's record, to follow a skip message.
    pub fn clues(&self) -> String {
        match (&self.shard, &self.clues) {
            (Some(shard), Some((log, status))) => format!(
                " (shard {shard}: see {} and {})",
                log.display(),
                status.display()
            ),
            _ => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_file_is_one_source_without_a_shard() {
        let got = sources(
            &[PathBuf::from("a.json")],
            &OpArg::new(Some("mm")),
            &mut Locks::default(),
        )
        .expect("sources");
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].shard, None);
    }

    #[test]
    fn a_folder_without_a_plan_is_named_as_such() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = read(dir.path()).expect_err("a folder");
        assert!(err.reason.contains("without plan.json"), "{err:?}");
    }
}
