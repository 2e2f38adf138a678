//! Puts a new set of shard files and its plan into a scratch folder all at once, or not at all.
//!
//! Everything new is first written, fsynced, to a hidden staging folder inside the scratch, where
//! a failure (a full disk) changes nothing a tool reads. Then every change to the scratch is a
//! rename that can be undone: a shard file moved in, an earlier run's file or folder moved aside
//! into the staging folder. The plan goes in last; if any step fails, the steps taken are undone
//! in reverse order, so the earlier plan still points at the earlier shards, with their records,
//! logs and statuses. Only once the plan is in place is the staging folder, with what was moved
//! aside, deleted.

use crate::flags::TOOL;
use anyhow::{bail, Context, Result};
use protocol::layout::Scratch;
use protocol::shard_plan::ShardPlan;
use std::fs;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

/// What replacing an earlier run's plan changed, for the caller to report.
#[derive(Debug, Default)]
pub struct Replaced {
    /// Whether a plan from an earlier run was there.
    pub plan: bool,
    /// Shard folders of the earlier run beyond the new shard count, now removed.
    pub removed: Vec<PathBuf>,
}

impl Replaced {
    /// Says what replacing an earlier run's plan in `out` changed.
    pub fn report(&self, out: &Path) {
        if self.plan {
            eprintln!(
                "{TOOL}: replaced the plan in {} from an earlier run",
                out.display()
            );
        }
        for path in &self.removed {
            eprintln!("{TOOL}: removed {} left by the earlier run", path.display());
        }
    }
}

/// A step taken in the scratch, and how to take it back.
#[derive(Debug)]
enum Undo {
    Rename { from: PathBuf, to: PathBuf },
    RemoveDir(PathBuf),
}

#[derive(Debug)]
struct Transaction {
    staging: tempfile::TempDir,
    done: Vec<Undo>,
}

impl Transaction {
    fn rename(&mut self, from: &Path, to: &Path) -> Result<()> {
        fs::rename(from, to)
            .with_context(|| format!("moving {} to {}", from.display(), to.display()))?;
        self.done.push(Undo::Rename {
            from: to.to_owned(),
            to: from.to_owned(),
        });
        Ok(())
    }

    /// Moves `path` aside into the staging folder when it is there; refuses anything there
    /// that warmup-shard or warmup-spawn did not put there (a folder where a file belongs).
    fn set_aside(&mut self, path: &Path, is_dir: bool) -> Result<()> {
        let meta = match fs::symlink_metadata(path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e).with_context(|| format!("checking {}", path.display())),
        };
        if meta.is_dir() != is_dir {
            let want = if is_dir { "a folder" } else { "a file" };
            bail!(
                "{} is not {want} as warmup-shard and warmup-spawn leave it: move it out of the scratch folder",
                path.display()
            );
        }
        let to = self
            .staging
            .path()
            .join(format!("aside-{}", self.done.len()));
        self.rename(path, &to)
    }

    /// Takes back every step, last first. What cannot be taken back is said on stderr.
    fn undo(&mut self) {
        while let Some(step) = self.done.pop() {
            let (result, what) = match &step {
                Undo::Rename { from, to } => (
                    fs::rename(from, to),
                    format!("move {} back to {}", from.display(), to.display()),
                ),
                Undo::RemoveDir(dir) => (fs::remove_dir(dir), format!("remove {}", dir.display())),
            };
            if let Err(e) = result {
                eprintln!(
                    "{}: could not {what} after the failure: {e}",
                    crate::flags::TOOL
                );
            }
        }
    }
}

/// Where shard i's new file waits in the staging folder.
fn staged_shard(staging: &tempfile::TempDir, i: usize) -> PathBuf {
    staging.path().join(format!("shard-{i}"))
}

/// Where the new plan waits in the staging folder.
fn staged_plan(staging: &tempfile::TempDir) -> PathBuf {
    staging.path().join("plan")
}

/// Writes `bytes` to a new file at `path` and syncs it.
fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file =
        fs::File::create_new(path).with_context(|| format!("creating {}", path.display()))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", path.display()))
}

/// Replaces the scratch's shard files with `shards` (shard i's text at i) and its plan with
/// `plan`, clearing what children of an earlier run left in those shard folders and removing the
/// earlier run's shard folders beyond the new count; all of it, or, on an error, none of it.
pub fn replace(scratch: &Scratch, shards: &[&str], plan: &ShardPlan) -> Result<Replaced> {
    replace_shard_plan(scratch, shards, plan)
}

/// As [`replace`], for a plan of `plan.shards.len()` shards of which the first `shards.len()`
/// have a shape file (all of them, or none in a by-key plan); the earlier run's claim folder is
/// set aside too, so no claim of its can answer the new run's keys.
pub fn replace_shard_plan(
    scratch: &Scratch,
    shards: &[&str],
    plan: &ShardPlan,
) -> Result<Replaced> {
    let root = scratch.root();
    let created_root = !root.exists();
    fs::create_dir_all(root)
        .with_context(|| format!("creating scratch folder {}", root.display()))?;
    let _lock = scratch.lock(crate::flags::TOOL)?;
    let result = stage(scratch, shards, plan).and_then(|mut tx| {
        let outcome = put_in_place(&mut tx, scratch, plan.shards.len(), shards.len());
        match outcome {
            Ok(replaced) => {
                sync_dir(root);
                if let Err(e) = tx.staging.close() {
                    eprintln!(
                        "{}: could not delete the earlier run's files set aside in {}: {e}",
                        crate::flags::TOOL,
                        root.display()
                    );
                }
                Ok(replaced)
            }
            Err(e) => {
                tx.undo();
                Err(e)
            }
        }
    });
    if result.is_err() && created_root {
        let _ = fs::remove_dir(root);
    }
    result
}

/// Writes every new file into a fresh staging folder inside the scratch.
fn stage(scratch: &Scratch, shards: &[&str], plan: &ShardPlan) -> Result<Transaction> {
    let staging = tempfile::Builder::new()
        .prefix(".warmup-shard-staging.")
        .tempdir_in(scratch.root())
        .with_context(|| format!("creating a staging folder in {}", scratch.root().display()))?;
    for (i, text) in shards.iter().enumerate() {
        write_synced(&staged_shard(&staging, i), text.as_bytes())?;
    }
    let mut json = serde_json::to_vec_pretty(plan).context("serialising the plan")?;
    json.push(b'\n');
    write_synced(&staged_plan(&staging), &json)?;
    Ok(Transaction {
        staging,
        done: Vec::new(),
    })
}

fn put_in_place(
    tx: &mut Transaction,
    scratch: &Scratch,
    k: usize,
    with_files: usize,
) -> Result<Replaced> {
    let mut replaced = Replaced {
        plan: scratch.shard_plan().exists(),
        removed: Vec::new(),
    };
    for i in 0..k {
        let dir = scratch.worker(i);
        match fs::create_dir(&dir) {
            Ok(()) => tx.done.push(Undo::RemoveDir(dir.clone())),
            Err(e) if e.kind() == ErrorKind::AlreadyExists && dir.is_dir() => {}
            Err(e) => {
                return Err(e).with_context(|| {
                    format!(
                        "creating shard folder {} (if a file has that name, move it out of the scratch folder)",
                        dir.display()
                    )
                })
            }
        }
        tx.set_aside(&scratch.shapes(i), false)?;
        // What child i of the earlier run left: none of it may pass for the new run's.
        tx.set_aside(&scratch.record_dir(i), true)?;
        tx.set_aside(&scratch.log(i), false)?;
        tx.set_aside(&scratch.status(i), false)?;
        if i < with_files {
            let staged = staged_shard(&tx.staging, i);
            tx.rename(&staged, &scratch.shapes(i))?;
        }
    }
    tx.set_aside(&scratch.claims(), true)?;
    let workers = scratch
        .workers()
        .with_context(|| format!("listing {}", scratch.root().display()))?;
    for (index, path) in workers {
        if index >= k {
            tx.set_aside(&path, true)?;
            replaced.removed.push(path);
        }
    }
    let staged = staged_plan(&tx.staging);
    tx.rename(&staged, &scratch.shard_plan())?;
    tx.done.clear();
    for i in 0..k {
        sync_dir(&scratch.worker(i));
    }
    Ok(replaced)
}

/// Makes renames in `dir` durable; a folder that cannot be synced is no reason to fail.
fn sync_dir(dir: &Path) {
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
}
