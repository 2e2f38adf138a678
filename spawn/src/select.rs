//! Which of a plan's shards one warmup-spawn runs, for runs spread over many machines: every
//! shard (the default), a list (`--only 0,4,8`, `--only 2-5`), or the one shard a task manager
//! names in its task's environment (`--index-from-env SLURM_ARRAY_TASK_ID`). Also what such a
//! run holds on the scratch ([`Claim`]): the tasks of one job array share the scratch, one task
//! per shard, while a whole-scratch run and a second run of the same shard are refused.
//! docs/CONTRACT.md ("Running some shards", "The scratch lock") is the promise.

use crate::job::Job;
use anyhow::{bail, Context, Result};
use nix::fcntl::{Flock, FlockArg};
use protocol::layout::Scratch;
use protocol::lock::{held_by_caller, ScratchLock};
use protocol::plan::Plan;
use std::ffi::OsString;
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::Path;
use toolkit::lock::Taken;

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

    /// Keeps only the chosen shards in `plan`; refuses an index the plan does not have (the
    /// lowest one asked for), checked on the ranges before anything is expanded.
    pub fn narrow(&self, plan: &mut Plan, path: &Path) -> Result<()> {
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

    /// Decides how a task's child gets its device. Its shard came from the task's environment,
    /// no `--devices` was given, and the task sees one device: a scheduler gave this task that
    /// device and no other (Slurm sets each step's CUDA_VISIBLE_DEVICES), so the child keeps the
    /// visibility it inherits, as it is. A task that sees more is pinned to the first, with a
    /// warning: tasks sharing a node would share it.
    pub fn place(&self, jobs: &mut [Job], devices_flag: bool, devices: &[String]) {
        if !self.from_env || devices_flag {
            return;
        }
        if devices.len() == 1 {
            jobs.iter_mut().for_each(|job| job.pinned = false);
        } else if let Some(first) = devices.first() {
            eprintln!(
                "{}: {}: this task sees {} devices; its shard runs on the first ({first}). Ask the \
                 scheduler for one device per task (sbatch --gres=gpu:1) so that tasks sharing a \
                 node do not share a device",
                crate::TOOL,
                self.asked,
                devices.len()
            );
        }
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

/// What a run holds on its scratch while it runs (docs/CONTRACT.md, "The scratch lock"). A run
/// of every shard: the scratch lock itself, exclusive. A run of some shards: a shared lock on
/// `SCRATCH/.lock` (unless the caller lent its own through [`protocol::lock::LOCK_FD`]), so
/// that the tasks of one job array run side by side while whole-scratch runs are kept out, and
/// an exclusive lock on each chosen shard's `w<i>/.lock`. Released when dropped, or when the
/// process dies, however it dies.
#[derive(Debug)]
pub struct Claim {
    _whole: Option<ScratchLock>,
    _shards: Vec<Flock<File>>,
}

impl Claim {
    /// Takes the locks, or refuses (an error: exit 2) naming who holds them. Writes nothing but
    /// the lock files. `some`: the shards of a run of some shards; `None`: a run of every shard.
    pub fn take(scratch: &Scratch, some: Option<&[usize]>) -> Result<Claim> {
        let Some(some) = some else {
            return Ok(Claim {
                _whole: Some(scratch.lock()?),
                _shards: Vec::new(),
            });
        };
        let mut locks = Vec::new();
        let whole = scratch.lock_file();
        if !held_by_caller(&whole) {
            let file = lock(&whole, FlockArg::LockSharedNonblock, || {
                format!(
                    "{}: this scratch folder is in use by another run ({}); wait for it to end, \
                     or give another scratch folder",
                    scratch.root().display(),
                    holder(&whole)
                )
            })?;
            // The pid there is a whole run's, which has ended: it would name the wrong holder.
            file.set_len(0)
                .with_context(|| format!("clearing {}", whole.display()))?;
            locks.push(file);
        }
        for &i in some {
            let path = scratch.shard_lock(i);
            let mut file = lock(&path, FlockArg::LockExclusiveNonblock, || {
                format!(
                    "shard {i} of {} is being run by {}; wait for that run to end (or cancel it: \
                     scancel the task) before running shard {i} again",
                    scratch.root().display(),
                    holder(&path)
                )
            })?;
            let me = format!("{} on {}\n", std::process::id(), hostname());
            file.set_len(0)
                .and_then(|()| file.rewind())
                .and_then(|()| file.write_all(me.as_bytes()))
                .with_context(|| format!("writing this run's pid into {}", path.display()))?;
            locks.push(file);
        }
        Ok(Claim {
            _whole: None,
            _shards: locks,
        })
    }
}

/// Locks `path`, created if missing; `held` says who holds it when another does.
fn lock(path: &Path, how: FlockArg, held: impl Fn() -> String) -> Result<Flock<File>> {
    let file = toolkit::lock::open(path).with_context(|| {
        format!(
            "opening the lock file {} (is the scratch writable?)",
            path.display()
        )
    })?;
    match toolkit::lock::try_lock(file, how)
        .with_context(|| format!("locking {}", path.display()))?
    {
        Taken::Held(locked) => Ok(locked),
        Taken::Busy(_) => bail!(held()),
    }
}

/// Who holds a lock file, from what its holder wrote there.
fn holder(path: &Path) -> String {
    let mut text = String::new();
    let _ = File::open(path).and_then(|mut f| f.read_to_string(&mut text));
    match text.trim() {
        "" => format!("runs of some shards hold {}", path.display()),
        who => format!("pid {who} holds {}", path.display()),
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "this host".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::plan::Shard;

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

    fn plan(n: usize) -> Plan {
        Plan {
            version: 1,
            op: "mm".into(),
            entry: None,
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

    fn pinned(choice: &Choice, devices_flag: bool, devices: &[&str]) -> bool {
        let mut jobs = [Job::new(
            &Scratch::new("/s"),
            0,
            "/s/w0/shapes.yaml".into(),
            &["pytest".into()],
            &crate::backend::BACKENDS[0],
            crate::process::Marker::new("r", 0),
            crate::job::Sharing {
                children: 1,
                cache_per_child: false,
            },
        )];
        let devices: Vec<String> = devices.iter().map(|d| (*d).to_owned()).collect();
        choice.place(&mut jobs, devices_flag, &devices);
        jobs[0].pinned
    }

    #[test]
    fn only_a_task_holding_one_device_keeps_it() {
        let task = Choice::from_args(None, Some("I"), env(&[("I", "0")]))
            .expect("ok")
            .expect("some");
        assert!(!pinned(&task, false, &["3"]));
        assert!(pinned(&task, true, &["3"]), "--devices pins");
        assert!(pinned(&task, false, &["0", "1"]));
        let only = Choice::from_args(Some("0"), None, env(&[]))
            .expect("ok")
            .expect("some");
        assert!(pinned(&only, false, &["3"]), "--only pins as usual");
    }

    fn claim(s: &Scratch, list: &str) -> Result<Claim> {
        Claim::take(s, Some(&chosen(list, 9)?))
    }

    fn scratch(dir: &Path, shards: usize) -> Scratch {
        let s = Scratch::new(dir);
        for i in 0..shards {
            std::fs::create_dir_all(s.worker(i)).expect("w");
        }
        s
    }

    #[test]
    fn two_claims_on_one_shard_exclude_each_other_but_not_on_two() {
        let dir = tempfile::tempdir().expect("tempdir");
        let s = scratch(dir.path(), 2);
        let first = claim(&s, "0").expect("first");
        let other = claim(&s, "1").expect("another shard runs alongside");
        let e = format!("{:#}", claim(&s, "0-1").expect_err("same shard"));
        assert!(
            e.contains("shard 0 of") && e.contains(&format!("pid {} on", std::process::id())),
            "{e}"
        );
        drop(first);
        claim(&s, "0").expect("free again once the first is gone");
        drop(other);
    }

    #[test]
    fn a_whole_scratch_run_and_runs_of_some_shards_keep_each_other_out() {
        let dir = tempfile::tempdir().expect("tempdir");
        let s = scratch(dir.path(), 1);
        let whole = Claim::take(&s, None).expect("a whole run");
        let e = format!("{:#}", claim(&s, "0").expect_err("held"));
        assert!(
            e.contains(&format!(
                "in use by another run (pid {}",
                std::process::id()
            )),
            "{e}"
        );
        assert!(
            !s.shard_lock(0).exists(),
            "refused before touching the shard"
        );
        drop(whole);

        let some = claim(&s, "0").expect("a run of shard 0");
        let e = format!("{:#}", Claim::take(&s, None).expect_err("held"));
        assert!(e.contains("in use by another run"), "{e}");
        drop(some);
        Claim::take(&s, None).expect("free again");
    }
}
