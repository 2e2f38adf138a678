//! The shards a run of some shards asks for: a list (`--only 0,4,8`, `--only 2-5`), or the one
//! shard a task manager names in its task's environment (`--index-from-env SLURM_ARRAY_TASK_ID`).
//! Here because two tools check a list against a shard plan: warmup-spawn, which runs those
//! shards, and warmup-plan, which refuses a bad `warmup-slurm --rerun LIST` before anything is
//! submitted.

use crate::shard_plan::ShardPlan;
use anyhow::{bail, Context, Result};
use std::ffi::OsString;
use std::path::Path;

/// The shards a run was asked for, and how the request was spelled, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// Inclusive ranges of shard indices (`3` is `3-3`), as asked: expanded only against the
    /// plan ([`Choice::narrow`]), so that `--only 0-18446744073709551615` costs nothing.
    pub ranges: Vec<(usize, usize)>,
    /// `--only 2-5` or `SLURM_ARRAY_TASK_ID=3`.
    pub asked: String,
    /// Picked from a task's environment: the task holds its own devices.
    pub from_env: bool,
}

impl Choice {
    /// From `--only LIST` or `--index-from-env VAR` (at most one is given; clap sees to that);
    /// `None` when neither is: every shard runs. `lookup` reads the environment.
    pub fn from_args(
        only: Option<&str>,
        index_from_env: Option<&str>,
        lookup: impl Fn(&str) -> Option<OsString>,
    ) -> Result<Option<Choice>> {
        if let Some(list) = only {
            return Ok(Some(Choice {
                ranges: parse_list(list)?,
                asked: format!("--only {list}"),
                from_env: false,
            }));
        }
        let Some(var) = index_from_env else {
            return Ok(None);
        };
        let var = var.trim();
        if var.is_empty() {
            bail!(
                "--index-from-env needs a variable name, e.g. --index-from-env SLURM_ARRAY_TASK_ID"
            );
        }
        let Some(raw) = lookup(var) else {
            bail!(
                "--index-from-env {var}: {var} is not set; run this inside a task that sets it \
                 (an sbatch --array task sets SLURM_ARRAY_TASK_ID, an srun task SLURM_PROCID), \
                 or pick shards with --only LIST"
            );
        };
        let text = raw.to_string_lossy();
        let index = index(text.trim()).with_context(|| {
            format!("--index-from-env {var}: {var}={text:?} is not a shard index (a whole number, 0 or more)")
        })?;
        Ok(Some(Choice {
            ranges: vec![(index, index)],
            asked: format!("{var}={index}"),
            from_env: true,
        }))
    }

    /// Whether shard `i` was asked for.
    pub fn contains(&self, i: usize) -> bool {
        self.ranges.iter().any(|&(a, b)| (a..=b).contains(&i))
    }

    /// Keeps only the chosen shards in the shard plan; refuses an index it does not have (the
    /// lowest one asked for), checked on the ranges before anything is expanded.
    pub fn narrow(&self, plan: &mut ShardPlan, path: &Path) -> Result<()> {
        let shards = plan.shards.len();
        let past_the_plan = self.ranges.iter().filter(|&&(_, b)| b >= shards);
        if let Some(bad) = past_the_plan.map(|&(a, _)| a.max(shards)).min() {
            let have = match shards {
                0 => "no shards".to_owned(),
                1 => "1 shard (index 0)".to_owned(),
                n => format!("{n} shards (indices 0-{})", n - 1),
            };
            bail!(
                "{}: shard {bad} is not in the plan, which has {have}; {} asks for it \
                 (with Slurm: submit --array=0-{})",
                path.display(),
                self.asked,
                shards.max(1) - 1
            );
        }
        plan.shards.retain(|s| self.contains(s.index));
        Ok(())
    }
}

/// Parses `--only LIST`: indices and inclusive ranges separated by commas (`3`, `0,4,8`, `2-5`,
/// `0,2-3,7`), as `sbatch --array` writes them; each an inclusive range, in the list's order,
/// not expanded.
pub fn parse_list(list: &str) -> Result<Vec<(usize, usize)>> {
    let mut out = Vec::new();
    for (n, item) in list.split(',').enumerate() {
        let item = item.trim();
        let what = |why: &str| {
            format!(
                "--only {list:?}: item {} {item:?} {why}; write shard indices and ranges \
                 separated by commas, e.g. --only 3, --only 0,4,8 or --only 2-5",
                n + 1
            )
        };
        if item.is_empty() {
            bail!(what("is empty"));
        }
        match item.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (
                    index(a.trim()).with_context(|| what("is not a range A-B of indices"))?,
                    index(b.trim()).with_context(|| what("is not a range A-B of indices"))?,
                );
                if a > b {
                    bail!(what("runs backwards"));
                }
                out.push((a, b));
            }
            None => {
                let i = index(item).with_context(|| what("is not a shard index"))?;
                out.push((i, i));
            }
        }
    }
    Ok(out)
}

/// A shard index: decimal digits only (no sign, no spaces inside).
fn index(text: &str) -> Result<usize> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        bail!("{text:?} is not a whole number");
    }
    text.parse()
        .with_context(|| format!("{text:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard_plan::Shard;

    fn err(list: &str) -> String {
        format!("{:#}", parse_list(list).expect_err(list))
    }

    /// The shards of `list` in a plan of `n`, ascending.
    fn chosen(list: &str, n: usize) -> Result<Vec<usize>> {
        let choice = Choice::from_args(Some(list), None, env(&[]))?.expect("some");
        let mut plan = plan(n);
        choice.narrow(&mut plan, Path::new("/s/plan.json"))?;
        Ok(plan.shards.iter().map(|s| s.index).collect())
    }

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.into())
    }

    #[test]
    fn lists_take_indices_ranges_and_mixes_ascending_and_once() {
        assert_eq!(chosen("3", 9).expect("one"), [3]);
        assert_eq!(chosen("0,4,8", 9).expect("list"), [0, 4, 8]);
        assert_eq!(chosen("2-5", 9).expect("range"), [2, 3, 4, 5]);
        assert_eq!(chosen(" 7, 0-2 ,1,5-5", 9).expect("mix"), [0, 1, 2, 5, 7]);
    }

    #[test]
    fn a_huge_range_is_refused_against_the_plan_before_it_is_expanded() {
        for list in ["0-18446744073709551615", "0-2000000000", "2,3-99999999999"] {
            let e = format!("{:#}", chosen(list, 4).expect_err(list));
            assert!(
                e.contains("which has 4 shards (indices 0-3)")
                    && e.contains(&format!("--only {list} asks")),
                "{e}"
            );
        }
        let e = format!("{:#}", chosen("6,5-9", 4).expect_err("past"));
        assert!(e.contains("shard 5 is not in the plan"), "{e}");
    }

    #[test]
    fn bad_lists_say_which_item_and_how_to_write_one() {
        assert!(err("").contains("item 1 \"\" is empty"), "{}", err(""));
        assert!(err("1,,2").contains("item 2"), "{}", err("1,,2"));
        assert!(err("5-2").contains("runs backwards"), "{}", err("5-2"));
        assert!(err("-1").contains("not a range"), "{}", err("-1"));
        assert!(err("1-").contains("not a range"), "{}", err("1-"));
        assert!(err("x").contains("not a shard index"), "{}", err("x"));
        assert!(err("+3").contains("not a shard index"), "{}", err("+3"));
        assert!(err("1 2").contains("e.g. --only 3"), "{}", err("1 2"));
        assert!(err("99999999999999999999999").contains("too large"));
    }

    #[test]
    fn an_index_from_the_environment_names_the_variable_and_its_value() {
        let choice =
            Choice::from_args(None, Some("SLURM_PROCID"), env(&[("SLURM_PROCID", " 2\n")]))
                .expect("ok")
                .expect("some");
        assert_eq!((choice.ranges, choice.from_env), (vec![(2, 2)], true));
        assert_eq!(choice.asked, "SLURM_PROCID=2");

        let missing =
            Choice::from_args(None, Some("SLURM_ARRAY_TASK_ID"), env(&[])).expect_err("unset");
        assert!(format!("{missing:#}").contains("SLURM_ARRAY_TASK_ID is not set"));
        let bad = Choice::from_args(
            None,
            Some("JOB_COMPLETION_INDEX"),
            env(&[("JOB_COMPLETION_INDEX", "4294967294-x")]),
        )
        .expect_err("bad");
        assert!(
            format!("{bad:#}")
                .contains("JOB_COMPLETION_INDEX=\"4294967294-x\" is not a shard index"),
            "{bad:#}"
        );
        assert_eq!(Choice::from_args(None, None, env(&[])).expect("none"), None);
    }

    fn plan(n: usize) -> ShardPlan {
        ShardPlan {
            version: 1,
            op: "mm".into(),
            entry: None,
            mode: None,
            source: "/s.yaml".into(),
            strategy: "round-robin".into(),
            cost_source: None,
            shapes: n,
            shards: (0..n)
                .map(|i| Shard {
                    index: i,
                    shape_file: format!("w{i}/shapes.yaml").into(),
                    shapes: vec![i],
                    shape_texts: None,
                    shape_costs: None,
                    expected_cost: None,
                })
                .collect(),
        }
    }

    #[test]
    fn the_plan_keeps_only_the_chosen_shards_and_refuses_one_it_lacks() {
        let choice = Choice::from_args(Some("1,4"), None, env(&[]))
            .expect("ok")
            .expect("some");
        let e = format!(
            "{:#}",
            choice
                .narrow(&mut plan(4), Path::new("/s/plan.json"))
                .expect_err("4")
        );
        assert!(
            e.contains("shard 4 is not in the plan, which has 4 shards (indices 0-3)"),
            "{e}"
        );
        assert!(e.contains("--only 1,4"), "{e}");
        let mut five = plan(5);
        choice
            .narrow(&mut five, Path::new("/s/plan.json"))
            .expect("in range");
        assert_eq!(
            five.shards.iter().map(|s| s.index).collect::<Vec<_>>(),
            [1, 4]
        );
    }
}
