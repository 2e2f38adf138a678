//! What a finished run measured of each shape's cost, from the plan and each shard's
//! `status.json`.
//!
//! A shard's cost is its child's wall time less the child's start-up (`--startup`: interpreter,
//! imports, device set-up; nothing of it depends on the shapes). A shard of one shape gives that
//! shape's cost exactly. A shard of several is split over its shapes in proportion to the costs
//! the plan expected for them (equally where the plan expected none), so the split is as good as
//! those expectations: right in total, and per shape exactly as wrong as the expectations were
//! wrong in their ratios. Costs are assumed to add up: sweeps that several shapes of one shard
//! share (a kernel keyed coarser than the shape, compiled once per process) are paid by the
//! first shape alone in reality, and spread over all of them here.

use anyhow::{bail, Context, Result};
use protocol::layout::Scratch;
use protocol::plan::Plan;
use serde_json::Value;

/// The per-shape costs one run gives, and what it could not measure.
#[derive(Debug, Default)]
pub struct Measurement {
    /// (shape text, seconds), in shard order.
    pub costs: Vec<(String, f64)>,
    /// Shapes measured alone in their shard (exact), and in shards of several (attributed).
    pub alone: usize,
    pub attributed: usize,
    /// Why shards gave nothing: `shard 3 failed`, ...
    pub skipped: Vec<String>,
    /// Shapes JSON cannot hold: a cost file has no key for them.
    pub without_text: usize,
}

/// Each measured shape's cost in the run of `plan` in `scratch`, less `startup` seconds per
/// child.
pub fn measure(plan: &Plan, scratch: &Scratch, startup: f64) -> Result<Measurement> {
    let mut m = Measurement::default();
    for shard in &plan.shards {
        let i = shard.index;
        let Some(texts) = &shard.shape_texts else {
            bail!(
                "{}: shard {i} lists no shape texts (an older warmup-shard wrote this plan): shard and run again with this build",
                scratch.plan().display()
            );
        };
        let Some(seconds) = wall_seconds(scratch, i, &mut m.skipped)? else {
            continue;
        };
        let cost = (seconds - startup).max(0.0);
        let weights = match &shard.shape_costs {
            Some(w) if w.iter().sum::<f64>() > 0.0 => w.clone(),
            _ => vec![1.0; texts.len()],
        };
        let total: f64 = weights.iter().sum();
        for (text, w) in texts.iter().zip(&weights) {
            match text {
                Some(text) => m.costs.push((text.clone(), cost * w / total)),
                None => m.without_text += 1,
            }
        }
        if texts.len() == 1 {
            m.alone += 1;
        } else {
            m.attributed += texts.len();
        }
    }
    Ok(m)
}

/// Shard i's wall seconds when its child ran to a good end; `None`, with the reason noted in
/// `skipped`, when it did not run or failed (its time says nothing of its full cost).
fn wall_seconds(scratch: &Scratch, i: usize, skipped: &mut Vec<String>) -> Result<Option<f64>> {
    let path = scratch.status(i);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            skipped.push(format!("shard {i} did not run"));
            return Ok(None);
        }
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let status: Value = serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: not a status file warmup-spawn wrote; run the shards again",
            path.display()
        )
    })?;
    let Some(seconds) = status["seconds"].as_f64().filter(|s| *s >= 0.0) else {
        bail!(
            "{}: no \"seconds\" of wall time; run the shards again with warmup-spawn",
            path.display()
        );
    };
    let outcome = if status["timed_out"] == Value::Bool(true) {
        Some("timed out")
    } else if status["exit_code"].as_i64() != Some(0) {
        Some("failed")
    } else {
        None
    };
    if let Some(outcome) = outcome {
        skipped.push(format!("shard {i} {outcome}"));
        return Ok(None);
    }
    Ok(Some(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::plan::Shard;

    fn plan(shards: Vec<(Vec<&str>, Option<Vec<f64>>)>) -> Plan {
        Plan {
            version: protocol::plan::VERSION,
            op: "mm".into(),
            entry: None,
            source: "/s.yaml".into(),
            strategy: "lpt".into(),
            cost_source: None,
            shapes: shards.iter().map(|s| s.0.len()).sum(),
            shards: shards
                .into_iter()
                .enumerate()
                .map(|(i, (texts, costs))| Shard {
                    index: i,
                    shape_file: format!("w{i}/shapes.yaml").into(),
                    shapes: (0..texts.len()).collect(),
                    shape_texts: Some(texts.iter().map(|t| Some((*t).to_owned())).collect()),
                    expected_cost: costs.as_ref().map(|c| c.iter().sum()),
                    shape_costs: costs,
                })
                .collect(),
        }
    }

    /// Shard i's status.json for each i, from its exit code, timed-out flag and seconds.
    fn statuses(scratch: &Scratch, shards: &[(&str, bool, f64)]) {
        for (i, (code, timed_out, seconds)) in shards.iter().enumerate() {
            std::fs::create_dir_all(scratch.worker(i)).expect("mkdir");
            let body = format!(
                r#"{{"exit_code": {code}, "timed_out": {timed_out}, "seconds": {seconds}}}"#
            );
            std::fs::write(scratch.status(i), body).expect("status");
        }
    }

    #[test]
    fn a_lone_shape_gets_its_shards_time_less_the_start_up() {
        let dir = tempfile::tempdir().expect("tempdir");
        let scratch = Scratch::new(dir.path());
        statuses(&scratch, &[("0", false, 5.5), ("0", false, 0.2)]);
        let p = plan(vec![(vec!["[1]"], None), (vec!["[2]"], None)]);
        let m = measure(&p, &scratch, 0.5).expect("measure");
        assert_eq!(m.costs, vec![("[1]".into(), 5.0), ("[2]".into(), 0.0)]);
        assert_eq!((m.alone, m.attributed), (2, 0));
    }

    #[test]
    fn several_shapes_split_the_time_as_the_plan_expected_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let scratch = Scratch::new(dir.path());
        statuses(&scratch, &[("0", false, 9.0), ("0", false, 4.0)]);
        let p = plan(vec![
            (vec!["[1]", "[2]"], Some(vec![1.0, 3.0])),
            (vec!["[3]", "[4]"], None),
        ]);
        let m = measure(&p, &scratch, 1.0).expect("measure");
        let want = [("[1]", 2.0), ("[2]", 6.0), ("[3]", 1.5), ("[4]", 1.5)];
        assert_eq!(m.costs, want.map(|(t, c)| (t.to_owned(), c)).to_vec());
        assert_eq!(m.attributed, 4);
    }

    #[test]
    fn failed_timed_out_and_missing_shards_give_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let scratch = Scratch::new(dir.path());
        statuses(&scratch, &[("1", false, 2.0), ("null", true, 9.0)]);
        let p = plan(vec![
            (vec!["[1]"], None),
            (vec!["[2]"], None),
            (vec!["[3]"], None),
        ]);
        let m = measure(&p, &scratch, 0.0).expect("measure");
        assert!(m.costs.is_empty());
        assert_eq!(
            m.skipped,
            ["shard 0 failed", "shard 1 timed out", "shard 2 did not run"]
        );
    }

    #[test]
    fn a_torn_status_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let scratch = Scratch::new(dir.path());
        statuses(&scratch, &[("0", false, 1.0)]);
        std::fs::write(scratch.status(0), r#"{"exit_code": 0, "seco"#).expect("torn");
        let p = plan(vec![(vec!["[1]"], None)]);
        let err = format!("{:#}", measure(&p, &scratch, 0.0).expect_err("must refuse"));
        assert!(
            err.contains("w0/status.json") && err.contains("run the shards again"),
            "{err}"
        );
    }
}
