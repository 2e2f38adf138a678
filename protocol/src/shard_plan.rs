//! The shard plan, `SCRATCH/plan.json`: how `warmup-shard` split an op's sweep into shards, for
//! `warmup-spawn`, `warmup-merge`, `warmup-publish` and `warmup-costs` to read. Versioned: a
//! reader refuses a shard plan of another version rather than guessing at it; fields added
//! within a version are optional, so a shard plan an older build wrote still reads.
//! docs/CONTRACT.md ("File formats", `SCRATCH/plan.json`) documents every field.
//!
//! The file keeps its name, and warmup-spawn its `--plan` flag, as the contract spells them; in
//! the code it is the *shard* plan, because `plan` alone is warmup-plan (the `plan` crate), which
//! decides how a run goes and writes no shard plan.

use crate::layout::Scratch;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The shard plan format this build writes and reads.
pub const VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardPlan {
    /// Always [`VERSION`] for plans this build writes.
    pub version: u32,
    /// The op whose shapes were split.
    pub op: String,
    /// The shape file's top-level key the shapes were split from, and under which each shard
    /// file holds them; absent (in plans of earlier builds) means the op. Read it with
    /// [`ShardPlan::entry`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    /// How the children share the sweep; absent (plans of earlier builds) means
    /// [`Mode::Shapes`]. Read it with [`ShardPlan::by_key`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// The shape file the shards were cut from, as an absolute path; empty (absent in the file)
    /// in a by-key plan, which cuts no shape file.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub source: PathBuf,
    /// How shapes were assigned to shards: `round-robin` (shape j to shard j mod k) or `lpt`
    /// (largest expected cost first, onto the shard with the least so far).
    pub strategy: String,
    /// Where the expected costs came from, when the plan has them: `file` (seconds, from a cost
    /// file, given or kept in a record folder's history), or a cost model, in its own units:
    /// `uniform`, `product` or `robust` (the default model where nothing was measured: under
    /// `lpt` the split that holds up over a family of profiles, each shape's cost its mean share
    /// of them). Absent: no costs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_source: Option<String>,
    /// How many shapes the op has in the source.
    pub shapes: usize,
    /// One entry per shard, in shard order.
    pub shards: Vec<Shard>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shard {
    /// The shard's index i: its folder is `w<i>`.
    pub index: usize,
    /// The shard's shape file, relative to the plan's folder (`w<i>/shapes.yaml`); empty (absent
    /// in the file) in a by-key plan, whose children run COMMAND whole.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub shape_file: PathBuf,
    /// Which of the source's shapes (0-based positions in the op's `shapes` list) it holds.
    pub shapes: Vec<usize>,
    /// Each of those shapes' text, the key a cost file knows it by (`null` for a shape JSON
    /// cannot hold). Absent in plans of older builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape_texts: Option<Vec<Option<String>>>,
    /// Each of those shapes' expected cost, in the units `cost_source` says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape_costs: Option<Vec<f64>>,
    /// The shard's expected cost: the sum of `shape_costs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_cost: Option<f64>,
}

/// How a plan's children share the sweep (docs/CONTRACT.md, "By-key mode").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Each child sweeps its shard's shapes (`w<i>/shapes.yaml`).
    Shapes,
    /// Each child runs COMMAND whole and claims each new autotune key in `SCRATCH/claims`: a
    /// key is tuned by the first child to meet it.
    ByKey,
}

fn is_empty(path: &Path) -> bool {
    path.as_os_str().is_empty()
}

/// A by-key plan's `strategy`: there is no split, children claim keys as they meet them.
pub const BY_KEY_STRATEGY: &str = "by-key";

impl ShardPlan {
    /// The by-key plan of `shards` children for `op` (docs/CONTRACT.md, "By-key mode"): no source,
    /// no shapes, shards without shape files.
    pub fn new_by_key(op: &str, shards: usize) -> ShardPlan {
        ShardPlan {
            version: VERSION,
            op: op.to_owned(),
            entry: None,
            mode: Some(Mode::ByKey),
            source: PathBuf::new(),
            strategy: BY_KEY_STRATEGY.to_owned(),
            cost_source: None,
            shapes: 0,
            shards: (0..shards)
                .map(|index| Shard {
                    index,
                    shape_file: PathBuf::new(),
                    shapes: Vec::new(),
                    shape_texts: None,
                    shape_costs: None,
                    expected_cost: None,
                })
                .collect(),
        }
    }

    /// Whether the plan is a by-key plan: shards without shape files, children that claim keys.
    pub fn by_key(&self) -> bool {
        self.mode == Some(Mode::ByKey)
    }

    /// The top-level key of the shape file and of every shard file that holds the shapes.
    pub fn entry(&self) -> &str {
        self.entry.as_deref().unwrap_or(&self.op)
    }

    /// Reads and checks a plan; returns it with the scratch folder it describes.
    pub fn load(path: &Path) -> Result<(ShardPlan, Scratch)> {
        let text = toolkit::file::read_to_string(path).with_context(|| {
            format!(
                "reading plan {} (write one with warmup-shard --out DIR)",
                path.display()
            )
        })?;
        let probe: serde_json::Value = serde_json::from_str(&text).with_context(|| {
            format!(
                "{}: not a JSON plan; rewrite it with warmup-shard",
                path.display()
            )
        })?;
        match probe.get("version").and_then(serde_json::Value::as_u64) {
            Some(v) if v == u64::from(VERSION) => {}
            Some(v) => bail!(
                "{}: plan version {v}, this build reads version {VERSION}; rewrite it with this warmup-shard",
                path.display()
            ),
            None => bail!(
                "{}: no plan \"version\"; rewrite it with warmup-shard",
                path.display()
            ),
        }
        let plan: ShardPlan = serde_json::from_value(probe).with_context(|| {
            format!(
                "{}: malformed plan; rewrite it with warmup-shard",
                path.display()
            )
        })?;
        for (i, shard) in plan.shards.iter().enumerate() {
            if shard.index != i {
                bail!(
                    "{}: shard {i} has index {}; rewrite the plan with warmup-shard",
                    path.display(),
                    shard.index
                );
            }
            let by_key = plan.by_key();
            if by_key != is_empty(&shard.shape_file) || (by_key && !shard.shapes.is_empty()) {
                let what = if by_key {
                    "a shape file or shapes, which a by-key plan's shards have not"
                } else {
                    "no \"shape_file\""
                };
                bail!(
                    "{}: shard {i} has {what}; rewrite the plan with warmup-shard",
                    path.display()
                );
            }
            let per_shape = [
                ("shape_texts", shard.shape_texts.as_ref().map(Vec::len)),
                ("shape_costs", shard.shape_costs.as_ref().map(Vec::len)),
            ];
            for (field, len) in per_shape {
                if len.is_some_and(|n| n != shard.shapes.len()) {
                    bail!(
                        "{}: shard {i}'s \"{field}\" does not list one entry per shape; rewrite the plan with warmup-shard",
                        path.display()
                    );
                }
            }
            let costs = shard
                .shape_costs
                .iter()
                .flatten()
                .map(|c| ("shape_costs", c));
            let expected = shard.expected_cost.iter().map(|c| ("expected_cost", c));
            if let Some((field, c)) = costs.chain(expected).find(|(_, c)| **c < 0.0) {
                bail!(
                    "{}: shard {i}'s \"{field}\" holds {c}, not a cost (a number of at least 0); rewrite the plan with warmup-shard",
                    path.display()
                );
            }
        }
        let root = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Ok((plan, Scratch::new(root)))
    }

    /// Writes the plan to `SCRATCH/plan.json` atomically.
    pub fn save(&self, scratch: &Scratch) -> Result<()> {
        toolkit::atomic::write_json(&scratch.shard_plan(), self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ShardPlan {
        ShardPlan {
            version: VERSION,
            op: "mm".into(),
            entry: Some("BlasBenchmark".into()),
            mode: None,
            source: "/data/shapes.yaml".into(),
            strategy: "round-robin".into(),
            cost_source: None,
            shapes: 3,
            shards: vec![
                Shard {
                    index: 0,
                    shape_file: "w0/shapes.yaml".into(),
                    shapes: vec![0, 2],
                    shape_texts: None,
                    shape_costs: None,
                    expected_cost: None,
                },
                Shard {
                    index: 1,
                    shape_file: "w1/shapes.yaml".into(),
                    shapes: vec![1],
                    shape_texts: None,
                    shape_costs: None,
                    expected_cost: None,
                },
            ],
        }
    }

    #[test]
    fn a_saved_plan_loads_back_with_its_scratch() {
        let dir = tempfile::tempdir().expect("tempdir");
        let scratch = Scratch::new(dir.path());
        sample().save(&scratch).expect("save");
        let (plan, loaded) = ShardPlan::load(&scratch.shard_plan()).expect("load");
        assert_eq!(plan, sample());
        assert_eq!(loaded, scratch);
    }

    #[test]
    fn a_plan_without_an_entry_reads_the_op_as_its_entry() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("plan.json");
        let mut json = serde_json::to_value(sample()).expect("json");
        json.as_object_mut().expect("object").remove("entry");
        std::fs::write(&path, json.to_string()).expect("write");
        let (plan, _) = ShardPlan::load(&path).expect("an earlier build's plan loads");
        assert_eq!(plan.entry, None);
        assert_eq!(plan.entry(), "mm");
    }

    #[test]
    fn a_version_1_plan_without_costs_or_shape_texts_still_loads() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("plan.json");
        std::fs::write(
            &path,
            r#"{"version":1,"op":"mm","entry":"BlasBenchmark","source":"/data/shapes.yaml","strategy":"round-robin","shapes":3,
                "shards":[{"index":0,"shape_file":"w0/shapes.yaml","shapes":[0,2]},
                          {"index":1,"shape_file":"w1/shapes.yaml","shapes":[1]}]}"#,
        )
        .expect("write");
        let (plan, _) = ShardPlan::load(&path).expect("load");
        assert_eq!(plan, sample());
    }

    #[test]
    fn expected_costs_and_shape_texts_round_trip() {
        let dir = tempfile::tempdir().expect("tempdir");
        let scratch = Scratch::new(dir.path());
        let mut plan = sample();
        plan.strategy = "lpt".into();
        plan.cost_source = Some("file".into());
        plan.shards[0].shape_texts = Some(vec![Some("[1,2]".into()), None]);
        plan.shards[0].shape_costs = Some(vec![2.5, 1.0]);
        plan.shards[0].expected_cost = Some(3.5);
        plan.save(&scratch).expect("save");
        assert_eq!(
            ShardPlan::load(&scratch.shard_plan()).expect("load").0,
            plan
        );
    }

    #[test]
    fn per_shape_lists_of_the_wrong_length_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let scratch = Scratch::new(dir.path());
        let mut plan = sample();
        plan.shards[1].shape_costs = Some(vec![1.0, 2.0]);
        plan.save(&scratch).expect("save");
        let err = format!(
            "{:#}",
            ShardPlan::load(&scratch.shard_plan()).expect_err("must refuse")
        );
        assert!(
            err.contains("shard 1") && err.contains("shape_costs"),
            "{err}"
        );
    }

    #[test]
    fn a_negative_cost_is_refused_naming_the_shard_and_field() {
        let dir = tempfile::tempdir().expect("tempdir");
        let scratch = Scratch::new(dir.path());
        let mut plan = sample();
        let n = plan.shards[1].shapes.len();
        plan.shards[1].shape_costs = Some(vec![-2.0; n]);
        plan.save(&scratch).expect("save");
        let err = format!(
            "{:#}",
            ShardPlan::load(&scratch.shard_plan()).expect_err("negative")
        );
        assert!(
            err.contains("shard 1's \"shape_costs\" holds -2, not a cost"),
            "{err}"
        );
    }

    fn by_key(shards: usize) -> ShardPlan {
        ShardPlan::new_by_key(&sample().op, shards)
    }

    #[test]
    fn a_by_key_plan_has_its_mode_and_no_shape_files_in_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let scratch = Scratch::new(dir.path());
        by_key(2).save(&scratch).expect("save");
        let text = std::fs::read_to_string(scratch.shard_plan()).expect("read");
        assert!(text.contains("\"mode\": \"by-key\""), "{text}");
        assert!(
            !text.contains("shape_file") && !text.contains("source"),
            "{text}"
        );
        let (plan, _) = ShardPlan::load(&scratch.shard_plan()).expect("load");
        assert!(plan.by_key());
        assert_eq!(plan, by_key(2));
        assert!(!sample().by_key());
    }

    #[test]
    fn a_shard_whose_shape_file_contradicts_the_mode_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let scratch = Scratch::new(dir.path());
        let mut plan = by_key(2);
        plan.shards[1].shape_file = "w1/shapes.yaml".into();
        plan.save(&scratch).expect("save");
        let err = format!(
            "{:#}",
            ShardPlan::load(&scratch.shard_plan()).expect_err("refused")
        );
        assert!(err.contains("shard 1 has a shape file"), "{err}");
        let mut plan = sample();
        plan.shards[0].shape_file = PathBuf::new();
        plan.save(&scratch).expect("save");
        let err = format!(
            "{:#}",
            ShardPlan::load(&scratch.shard_plan()).expect_err("refused")
        );
        assert!(err.contains("shard 0 has no \"shape_file\""), "{err}");
    }

    #[test]
    fn another_version_is_refused_with_both_numbers() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("plan.json");
        std::fs::write(&path, r#"{"version": 7, "op": "mm"}"#).expect("write");
        let err = format!("{:#}", ShardPlan::load(&path).expect_err("must refuse"));
        assert!(
            err.contains("version 7") && err.contains("version 1"),
            "{err}"
        );
    }
}
