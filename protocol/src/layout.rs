//! The scratch layout (docs/CONTRACT.md, "Scratch layout"): one folder per run, one `w<i>` folder
//! per shard. Every path a tool reads or writes under SCRATCH is spelled here and nowhere else.
//!
//! No Triton cache in the layout by default: the children share the caller's `TRITON_CACHE_DIR`,
//! where the plugin gave each child one (`w<i>/.triton_cache`, kept behind `--cache-per-child`).
//! Shards split round-robin or by cost mix the shapes, so shapes of one compile specialization
//! land in every shard, and with a cache each every child compiled every specialization; one
//! shared cache, with the harness compiling each key's configs ahead and once between the
//! children, compiles each once (BENCHMARKS.md, "Figures the contract used to carry", has the
//! runs). Triton writes an entry to a temporary and renames it into place, so children never read
//! half of one; a second run finds the kernels compiled, while every config is still timed (the
//! harness keeps Triton's autotune-result cache off).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// `SCRATCH/plan.json`, relative to the scratch folder.
pub const SHARD_PLAN: &str = "plan.json";
/// `SCRATCH/merged.json`, relative to the scratch folder.
pub const MERGED: &str = "merged.json";
/// `SCRATCH/merged`, relative to the scratch folder: the record folder a run publishes into when
/// it is given none (beside `merged.json`, which is warmup-merge's output, not a record folder).
pub const FALLBACK_RECORDS: &str = "merged";
/// `SCRATCH/conflicts.json`, relative to the scratch folder.
pub const CONFLICTS: &str = "conflicts.json";
/// `SCRATCH/.lock`, relative to the scratch folder: the scratch lock's file.
pub const LOCK: &str = ".lock";

/// `SCRATCH/slurm`, relative to the scratch folder: warmup-slurm's folder.
pub const SLURM: &str = "slurm";

/// `SCRATCH/claims`, relative to the scratch folder: by-key mode's claim folder, the children's
/// `WARMUP_HARNESS_CLAIM_DIR`.
pub const CLAIMS: &str = "claims";

/// A shard's shape file name inside its `w<i>` folder.
const SHAPES: &str = "shapes.yaml";

/// `DIR/<op>.json`: the op's record file in a record folder (a shard's `w<i>/rec`, or the one
/// published into), the name every tool and the harness give it.
pub fn record_file(dir: &Path, op: impl AsRef<OsStr>) -> PathBuf {
    op_file(dir, "", op.as_ref(), ".json")
}

/// `DIR/<prefix><op><suffix>`: one of the op's files in a record folder (crate::history names
/// the others).
pub(crate) fn op_file(dir: &Path, prefix: &str, op: &OsStr, suffix: &str) -> PathBuf {
    let mut name = OsString::from(prefix);
    name.push(op);
    name.push(suffix);
    dir.join(name)
}

/// The scratch folder of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scratch {
    root: PathBuf,
}

impl Scratch {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Scratch { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `SCRATCH/plan.json`.
    pub fn shard_plan(&self) -> PathBuf {
        self.root.join(SHARD_PLAN)
    }

    /// `SCRATCH/merged.json`: what `warmup-merge --in-scratch` writes and `warmup-publish
    /// SCRATCH` publishes.
    pub fn merged(&self) -> PathBuf {
        self.root.join(MERGED)
    }

    /// `SCRATCH/merged`: the record folder a run given none publishes into.
    pub fn fallback_records(&self) -> PathBuf {
        self.root.join(FALLBACK_RECORDS)
    }

    /// `SCRATCH/slurm`: warmup-slurm's batch scripts, job ids and Slurm's output files.
    pub fn slurm(&self) -> PathBuf {
        self.root.join(SLURM)
    }

    /// `SCRATCH/slurm/shard.sbatch`: the job array's batch script, kept for `--rerun`.
    pub fn shard_sbatch(&self) -> PathBuf {
        self.slurm().join("shard.sbatch")
    }

    /// `SCRATCH/slurm/finish.sbatch`: the finishing job's batch script.
    pub fn finish_sbatch(&self) -> PathBuf {
        self.slurm().join("finish.sbatch")
    }

    /// `SCRATCH/slurm/jobs`: one `KIND JOBID` line per job warmup-slurm submitted for this
    /// scratch (`array`, `finish`), as it printed them.
    pub fn slurm_jobs(&self) -> PathBuf {
        self.slurm().join("jobs")
    }

    /// `SCRATCH/conflicts.json`: the conflicts list `warmup-merge --in-scratch` writes.
    pub fn conflicts(&self) -> PathBuf {
        self.root.join(CONFLICTS)
    }

    /// `SCRATCH/.lock`: the file the scratch lock is taken on (see [`Scratch::lock`]).
    pub fn lock_file(&self) -> PathBuf {
        self.root.join(LOCK)
    }

    /// `SCRATCH/claims`: where by-key children claim autotune keys and publish their winners.
    pub fn claims(&self) -> PathBuf {
        self.root.join(CLAIMS)
    }

    /// `SCRATCH/w<i>`.
    pub fn worker(&self, shard: usize) -> PathBuf {
        self.root.join(worker_dir(shard))
    }

    /// `SCRATCH/w<i>/shapes.yaml`: shard i's shape file.
    pub fn shapes(&self, shard: usize) -> PathBuf {
        self.root.join(shapes_in_scratch(shard))
    }

    /// The `w<i>` folders present in the scratch, as (i, path), in no particular order. Only
    /// names [`worker_dir`] spells count: `w01`, `w1x` or a file named `w1` are not shard folders.
    pub fn workers(&self) -> std::io::Result<Vec<(usize, PathBuf)>> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir(&self.root)? {
            let entry = entry?;
            let Some(index) = worker_index(&entry.file_name()) else {
                continue;
            };
            if entry.file_type()?.is_dir() {
                found.push((index, entry.path()));
            }
        }
        Ok(found)
    }

    /// `SCRATCH/w<i>/rec`: child i's record folder.
    pub fn record_dir(&self, shard: usize) -> PathBuf {
        self.worker(shard).join("rec")
    }

    /// `SCRATCH/w<i>/rec/<op>.json`: child i's record file.
    pub fn record_file(&self, shard: usize, op: &str) -> PathBuf {
        record_file(&self.record_dir(shard), op)
    }

    /// `SCRATCH/w<i>/worker.log`: child i's stdout and stderr.
    pub fn log(&self, shard: usize) -> PathBuf {
        self.worker(shard).join("worker.log")
    }

    /// `SCRATCH/w<i>/status.json`: child i's outcome.
    pub fn status(&self, shard: usize) -> PathBuf {
        self.worker(shard).join("status.json")
    }

    /// `SCRATCH/w<i>/progress.json`: how far child i's sweep is (keys tuned, configs timed),
    /// which its harness rewrites and warmup-spawn reads for its progress lines.
    pub fn progress(&self, shard: usize) -> PathBuf {
        self.worker(shard).join("progress.json")
    }

    /// `SCRATCH/w<i>/.triton_cache`: child i's Triton cache under `warmup-spawn
    /// --cache-per-child` (by default children share the caller's cache).
    pub fn triton_cache(&self, shard: usize) -> PathBuf {
        self.worker(shard).join(".triton_cache")
    }

    /// `SCRATCH/w<i>/.lock`: held by a run of some shards (`warmup-spawn --only`) for shard i.
    pub fn shard_lock(&self, shard: usize) -> PathBuf {
        self.worker(shard).join(".lock")
    }

    /// Removes what child i left in an earlier run (its records, log and status), so that none
    /// of it can pass for a new run's: a shard that dies, or never starts, must leave no record
    /// and no status. The Triton cache stays: it only makes the next sweep faster.
    pub fn clear_outputs(&self, shard: usize) -> anyhow::Result<()> {
        use anyhow::Context;
        let gone = |result: std::io::Result<()>, path: &Path| match result {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("removing the stale {}", path.display()))
            }
            _ => Ok(()),
        };
        let rec = self.record_dir(shard);
        gone(std::fs::remove_dir_all(&rec), &rec)?;
        for file in [self.log(shard), self.status(shard), self.progress(shard)] {
            gone(std::fs::remove_file(&file), &file)?;
        }
        Ok(())
    }
}

/// `w<i>`, the folder name of shard i.
pub fn worker_dir(shard: usize) -> String {
    format!("w{shard}")
}

/// The shard index a folder name spells (`w7` -> 7), if it is exactly what [`worker_dir`] writes.
pub fn worker_index(name: &std::ffi::OsStr) -> Option<usize> {
    let index: usize = name.to_str()?.strip_prefix('w')?.parse().ok()?;
    (name.to_str()? == worker_dir(index)).then_some(index)
}

/// `w<i>/shapes.yaml`: shard i's shape file relative to the scratch folder, as the plan records it.
pub fn shapes_in_scratch(shard: usize) -> PathBuf {
    Path::new(&worker_dir(shard)).join(SHAPES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_follow_the_contract() {
        let s = Scratch::new("/tmp/run");
        assert_eq!(s.shard_plan(), Path::new("/tmp/run/plan.json"));
        assert_eq!(s.merged(), Path::new("/tmp/run/merged.json"));
        assert_eq!(s.conflicts(), Path::new("/tmp/run/conflicts.json"));
        assert_eq!(s.shapes(3), Path::new("/tmp/run/w3/shapes.yaml"));
        assert_eq!(s.record_file(0, "mm"), Path::new("/tmp/run/w0/rec/mm.json"));
        assert_eq!(s.log(1), Path::new("/tmp/run/w1/worker.log"));
        assert_eq!(s.status(1), Path::new("/tmp/run/w1/status.json"));
        assert_eq!(s.triton_cache(2), Path::new("/tmp/run/w2/.triton_cache"));
        assert_eq!(s.lock_file(), Path::new("/tmp/run/.lock"));
        assert_eq!(s.claims(), Path::new("/tmp/run/claims"));
        assert_eq!(s.shard_lock(2), Path::new("/tmp/run/w2/.lock"));
    }

    #[test]
    fn only_the_names_worker_dir_writes_are_worker_folders() {
        use std::ffi::OsStr;
        assert_eq!(worker_index(OsStr::new("w0")), Some(0));
        assert_eq!(worker_index(OsStr::new("w12")), Some(12));
        for name in ["w", "w01", "w1x", "x1", "w-1", "w+1", "W1", "w 1"] {
            assert_eq!(worker_index(OsStr::new(name)), None, "{name}");
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let s = Scratch::new(dir.path());
        for name in ["w0", "w3", "w01", "keep"] {
            std::fs::create_dir(dir.path().join(name)).expect("mkdir");
        }
        std::fs::write(dir.path().join("w5"), "a file").expect("file");
        let mut found = s.workers().expect("list");
        found.sort();
        assert_eq!(found, vec![(0, s.worker(0)), (3, s.worker(3))]);
        assert_eq!(shapes_in_scratch(2), Path::new("w2/shapes.yaml"));
    }

    #[test]
    fn clearing_outputs_keeps_only_the_compile_cache() {
        let dir = tempfile::tempdir().expect("tempdir");
        let s = Scratch::new(dir.path());
        std::fs::create_dir_all(s.record_dir(0)).expect("rec");
        std::fs::create_dir_all(s.triton_cache(0)).expect("cache");
        for file in [s.record_file(0, "mm"), s.log(0), s.status(0)] {
            std::fs::write(file, "old").expect("seed");
        }
        s.clear_outputs(0).expect("clear");
        assert!(!s.record_dir(0).exists() && !s.log(0).exists() && !s.status(0).exists());
        assert!(s.triton_cache(0).is_dir());
        s.clear_outputs(1).expect("nothing to clear is fine");
    }
}
