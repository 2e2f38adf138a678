//! Each shape's cost in a finished run: its shard's wall time (each shard's `status.json`), split
//! over the shard's shapes by the plan.
//!
//! A shard's cost is its child's wall time less the child's start-up (`--startup`: interpreter,
//! imports, device set-up; nothing of it depends on the shapes), floored at 0. A shard of one shape
//! gives that shape's cost exactly. A shard of several is split over its shapes in proportion to
//! the costs the plan expected for them (equally where the plan expected none), so the split is as
//! good as those expectations: right in total, and per shape exactly as wrong as the expectations
//! were wrong in their ratios. Costs are assumed to add up: sweeps that several shapes of one shard
//! share (a kernel keyed coarser than the shape, compiled once per process) are paid by the first
//! shape alone in reality, and spread over all of them here.

use anyhow::{bail, Result};
use protocol::layout::Scratch;
use protocol::shard_plan::ShardPlan;
use protocol::status::{Outcome, ShardStatus};

use protocol::costs::MAX_SECONDS;

/// The per-shape costs one run gives, and what it could not measure.
#[derive(Debug, Default)]
pub struct ShapeCosts {
    /// (shape text, seconds), in shard order.
    pub costs: Vec<(String, f64)>,
    /// Shapes measured alone in their shard (exact), and in shards of several (attributed).
    pub alone: usize,
    pub attributed: usize,
    /// Why shards gave nothing: `shard 3 failed`, ...
    pub skipped: Vec<String>,
    /// Shapes JSON cannot hold: a cost file has no key for them.
    pub without_text: usize,
    /// Shards whose time was more than a cost file holds, and was counted as
    /// [`MAX_SECONDS`]: `shard 3 took 1e306 s`, ...
    pub saturated: Vec<String>,
}

/// Each measured shape's cost in the run of `plan` in `scratch`, less `startup` seconds per
/// child.
pub fn of_run(plan: &ShardPlan, scratch: &Scratch, startup: f64) -> Result<ShapeCosts> {
    let mut m = ShapeCosts::default();
    for shard in &plan.shards {
        let i = shard.index;
        let Some(texts) = &shard.shape_texts else {
            bail!(
                "{}: shard {i} lists no shape texts (an older warmup-shard wrote this plan): shard and run again with this build",
                scratch.shard_plan().display()
            );
        };
        let Some(seconds) = wall_seconds(scratch, i, &mut m.skipped)? else {
            continue;
        };
        let mut cost = (seconds - startup).max(0.0);
        if cost > MAX_SECONDS {
            m.saturated.push(format!("shard {i} took {seconds:e} s"));
            cost = MAX_SECONDS;
        }
        let weights = weights(shard.shape_costs.as_deref(), texts.len());
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

/// The plan's expected costs of a shard's `n` shapes as weights to split its time by; equal
/// where the plan has none, or none above 0. Costs whose sum overflows (a plan's 1e308s, which
/// would split the time into zeros) are scaled by the largest first.
fn weights(expected: Option<&[f64]>, n: usize) -> Vec<f64> {
    let Some(w) = expected else {
        return vec![1.0; n];
    };
    let sum: f64 = w.iter().sum();
    let largest = w.iter().copied().fold(0.0, f64::max);
    if sum.is_finite() && sum > 0.0 {
        w.to_vec()
    } else if largest > 0.0 {
        w.iter().map(|c| c / largest).collect()
    } else {
        vec![1.0; n]
    }
}

/// Shard i's wall seconds when its child ran to a good end ([`Outcome::Ok`], the rule every
/// run summary counts by); `None`, with the reason noted in `skipped`, when it did not run, failed,
/// timed out or was stopped (its time says nothing of its full cost).
fn wall_seconds(scratch: &Scratch, i: usize, skipped: &mut Vec<String>) -> Result<Option<f64>> {
    let status = ShardStatus::read(&scratch.status(i))?;
    let why = match Outcome::of(status.as_ref()) {
        Outcome::Ok => return Ok(status.map(|s| s.seconds)),
        Outcome::NotStarted => "did not run",
        Outcome::Failed => "failed",
        Outcome::TimedOut => "timed out",
        Outcome::Stopped => "was stopped",
    };
    skipped.push(format!("shard {i} {why}"));
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::shard_plan::Shard;

    fn plan(shards: Vec<(Vec<&str>, Option<Vec<f64>>)>) -> ShardPlan {
        ShardPlan {
            version: protocol::shard_plan::VERSION,
            op: "mm".into(),
            entry: None,
            mode: None,
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

    /// How a test's shard ended: exited `code` (`None`: killed), timed out, was stopped.
    struct End {
        code: Option<i32>,
        timed_out: bool,
        interrupted: bool,
        seconds: f64,
    }

    fn exited(code: i32, seconds: f64) -> End {
        End {
            code: Some(code),
            timed_out: false,
            interrupted: false,
            seconds,
        }
    }

    /// Shard i's status.json for each i, as warmup-spawn writes it.
    fn statuses(scratch: &Scratch, shards: &[End]) {
        for (i, end) in shards.iter().enumerate() {
            std::fs::create_dir_all(scratch.worker(i)).expect("mkdir");
            let status = ShardStatus {
                shard: i,
                device: "0".into(),
                pid: Some(1),
                exit_code: end.code,
                signal: None,
                signal_name: None,
                timed_out: end.timed_out,
                interrupted: end.interrupted,
                started_at: "2024-01-01T00:00:00.000Z".into(),
                seconds: end.seconds,
                argv: vec!["pytest".into()],
                env: Default::default(),
                log: scratch.log(i),
                error: None,
            };
            status.write(&scratch.status(i)).expect("status");
        }
    }

    /// [`of_run`] of a run of `shards` whose first ones ended as `ends` (the rest never ran).
    fn costs_of(
        ends: &[End],
        shards: Vec<(Vec<&str>, Option<Vec<f64>>)>,
        startup: f64,
    ) -> ShapeCosts {
        let dir = tempfile::tempdir().expect("tempdir");
        let scratch = Scratch::new(dir.path());
        statuses(&scratch, ends);
        of_run(&plan(shards), &scratch, startup).expect("costs of the run")
    }

    #[test]
    fn a_lone_shape_gets_its_shards_time_less_the_start_up() {
        let m = costs_of(
            &[exited(0, 5.5), exited(0, 0.2)],
            vec![(vec!["[1]"], None), (vec!["[2]"], None)],
            0.5,
        );
        assert_eq!(m.costs, vec![("[1]".into(), 5.0), ("[2]".into(), 0.0)]);
        assert_eq!((m.alone, m.attributed), (2, 0));
    }

    #[test]
    fn several_shapes_split_the_time_as_the_plan_expected_them() {
        let m = costs_of(
            &[exited(0, 9.0), exited(0, 4.0)],
            vec![
                (vec!["[1]", "[2]"], Some(vec![1.0, 3.0])),
                (vec!["[3]", "[4]"], None),
            ],
            1.0,
        );
        let want = [("[1]", 2.0), ("[2]", 6.0), ("[3]", 1.5), ("[4]", 1.5)];
        assert_eq!(m.costs, want.map(|(t, c)| (t.to_owned(), c)).to_vec());
        assert_eq!(m.attributed, 4);
    }

    #[test]
    fn failed_timed_out_stopped_and_missing_shards_give_nothing() {
        let timed_out = End {
            code: None,
            timed_out: true,
            ..exited(0, 9.0)
        };
        // A child that exits 0 on SIGTERM was still cut short: its time is not its cost.
        let stopped = End {
            interrupted: true,
            ..exited(0, 3.0)
        };
        let m = costs_of(
            &[exited(1, 2.0), timed_out, stopped],
            vec![
                (vec!["[1]"], None),
                (vec!["[2]"], None),
                (vec!["[3]"], None),
                (vec!["[4]"], None),
            ],
            0.0,
        );
        assert!(m.costs.is_empty(), "{:?}", m.costs);
        assert_eq!(
            m.skipped,
            [
                "shard 0 failed",
                "shard 1 timed out",
                "shard 2 was stopped",
                "shard 3 did not run"
            ]
        );
    }

    #[test]
    fn huge_times_and_huge_expectations_saturate_rather_than_vanish() {
        let m = costs_of(
            &[exited(0, 1e306), exited(0, 4.0)],
            vec![
                (vec!["[1]"], None),
                (vec!["[2]", "[3]"], Some(vec![1e308, 1e308])),
            ],
            0.0,
        );
        let want = [("[1]", MAX_SECONDS), ("[2]", 2.0), ("[3]", 2.0)];
        assert_eq!(m.costs, want.map(|(t, c)| (t.to_owned(), c)).to_vec());
        assert_eq!(m.saturated, ["shard 0 took 1e306 s"]);
    }

    #[test]
    fn a_torn_status_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let scratch = Scratch::new(dir.path());
        statuses(&scratch, &[exited(0, 1.0)]);
        std::fs::write(scratch.status(0), r#"{"exit_code": 0, "seco"#).expect("torn");
        let p = plan(vec![(vec!["[1]"], None)]);
        let err = format!("{:#}", of_run(&p, &scratch, 0.0).expect_err("must refuse"));
        assert!(
            err.contains("w0/status.json") && err.contains("run the shards again"),
            "{err}"
        );
    }
}
