//! Which of a plan's shards one warmup-spawn runs, for runs spread over many machines: every
//! shard (the default), a list (`--only 0,4,8`, `--only 2-5`), or the one shard a task manager
//! names in its task's environment (`--index-from-env SLURM_ARRAY_TASK_ID`). Also what such a
//! run holds on the scratch ([`ScratchHold`]): the tasks of one job array share the scratch, one task
//! per shard, while a whole-scratch run and a second run of the same shard are refused.
//! docs/CONTRACT.md ("Running some shards", "The scratch lock") is the promise.

use crate::sweep::job::Job;
use anyhow::{bail, Context, Result};
use nix::fcntl::{Flock, FlockArg};
pub use protocol::choice::Choice;
use protocol::layout::Scratch;
use protocol::lock::{held_by_caller, ScratchLock};
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::Path;
use toolkit::lock::Taken;

/// Decides how a task's child gets its device. Its shard came from the task's environment,
/// no `--devices` was given, and the task sees one device: a scheduler gave this task that
/// device and no other (Slurm sets each step's CUDA_VISIBLE_DEVICES), so the child keeps the
/// visibility it inherits, as it is. A task that sees more is pinned to the first, with a
/// warning: tasks sharing a node would share it.
pub fn place(choice: &Choice, jobs: &mut [Job], devices_flag: bool, devices: &[String]) {
    if !choice.from_env || devices_flag {
        return;
    }
    if devices.len() == 1 {
        jobs.iter_mut().for_each(|job| job.pinned = false);
    } else if let Some(first) = devices.first() {
        eprintln!(
            "{}: {}: this task sees {} devices; its shard runs on the first ({first}). Ask the \
             scheduler for one device per task (sbatch --gres=gpu:1) so that tasks settings a \
             node do not share a device",
            crate::flags::TOOL,
            choice.asked,
            devices.len()
        );
    }
}

/// What a run holds on its scratch while it runs (docs/CONTRACT.md, "The scratch lock"). A run
/// of every shard: the scratch lock itself, exclusive. A run of some shards: a shared lock on
/// `SCRATCH/.lock` (unless the caller lent its own through [`protocol::lock::LOCK_FD`]), so
/// that the tasks of one job array run side by side while whole-scratch runs are kept out, and
/// an exclusive lock on each chosen shard's `w<i>/.lock`. Released when dropped, or when the
/// process dies, however it dies.
#[derive(Debug)]
pub struct ScratchHold {
    _whole: Option<ScratchLock>,
    _shards: Vec<Flock<File>>,
}

impl ScratchHold {
    /// Takes the locks, or refuses (an error: exit 2) naming who holds them. Writes nothing but
    /// the lock files. `some`: the shards of a run of some shards; `None`: a run of every shard.
    pub fn take(scratch: &Scratch, some: Option<&[usize]>) -> Result<ScratchHold> {
        let Some(some) = some else {
            return Ok(ScratchHold {
                _whole: Some(scratch.lock(crate::flags::TOOL)?),
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
        Ok(ScratchHold {
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
    use std::ffi::OsString;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.into())
    }

    fn pinned(choice: &Choice, devices_flag: bool, devices: &[&str]) -> bool {
        let mut jobs = [Job::new(
            &Scratch::new("/s"),
            0,
            Some("/s/w0/shapes.yaml".into()),
            &["pytest".into()],
            &protocol::backend::BACKENDS[0],
            crate::sweep::process::Marker::new("r", 0),
            crate::sweep::job::RunSettings {
                children: 1,
                cache_per_child: false,
                claims: None,
                resume: None,
                op: "mm".into(),
            },
        )];
        let devices: Vec<String> = devices.iter().map(|d| (*d).to_owned()).collect();
        place(choice, &mut jobs, devices_flag, &devices);
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

    fn hold(s: &Scratch, list: &str) -> Result<ScratchHold> {
        let shards: Vec<usize> = protocol::choice::parse_list(list)?
            .into_iter()
            .flat_map(|(a, b)| a..=b)
            .collect();
        ScratchHold::take(s, Some(&shards))
    }

    fn scratch(dir: &Path, shards: usize) -> Scratch {
        let s = Scratch::new(dir);
        for i in 0..shards {
            std::fs::create_dir_all(s.worker(i)).expect("w");
        }
        s
    }

    #[test]
    fn two_holds_on_one_shard_exclude_each_other_but_not_on_two() {
        let dir = tempfile::tempdir().expect("tempdir");
        let s = scratch(dir.path(), 2);
        let first = hold(&s, "0").expect("first");
        let other = hold(&s, "1").expect("another shard runs alongside");
        let e = format!("{:#}", hold(&s, "0-1").expect_err("same shard"));
        assert!(
            e.contains("shard 0 of") && e.contains(&format!("pid {} on", std::process::id())),
            "{e}"
        );
        drop(first);
        hold(&s, "0").expect("free again once the first is gone");
        drop(other);
    }

    #[test]
    fn a_whole_scratch_run_and_runs_of_some_shards_keep_each_other_out() {
        let dir = tempfile::tempdir().expect("tempdir");
        let s = scratch(dir.path(), 1);
        let whole = ScratchHold::take(&s, None).expect("a whole run");
        let e = format!("{:#}", hold(&s, "0").expect_err("held"));
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

        let some = hold(&s, "0").expect("a run of shard 0");
        let e = format!("{:#}", ScratchHold::take(&s, None).expect_err("held"));
        assert!(e.contains("in use by another run"), "{e}");
        drop(some);
        ScratchHold::take(&s, None).expect("free again");
    }
}
