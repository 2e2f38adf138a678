//! scripts/warmup-slurm's plan: its mode (submit, `--rerun`, `--finish`), its options checked
//! (the shard list against the shard plan), the scratch's Slurm files, and for a submission the shape
//! file, the record folder, the argv of warmup-shard and warmup-spawn, with the default split
//! scripts/warmup has (lpt, by the op's history where the record folder holds one for this run,
//! else by the robust model), and the two batch scripts' text (`batch`). Then, in every mode,
//! whether it may go on: Slurm's commands are there (to submit) and no job recorded for the
//! scratch is still queued (`jobs`).

use crate::batch::Batch;
use crate::discover::{self, World};
use crate::flags::Slurm;
use crate::output::Output;
use crate::refusal::Refused;
use anyhow::{bail, Result};
use protocol::choice::Choice;
use protocol::layout::Scratch;
use protocol::probe::Platform;
use protocol::shard_plan::ShardPlan;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The path of scripts/warmup-slurm, which the script sets when it runs warmup-plan: the
/// finishing job runs it. Unset, it is `warmup-slurm` beside the tools (as installed).
pub const SCRIPT: &str = "WARMUP_SLURM_SCRIPT";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Submit,
    Rerun,
    Finish,
}

pub fn plan(args: &Slurm, world: &World) -> Result<Output> {
    let Some(scratch) = &args.scratch else {
        bail!("--scratch DIR is required: a folder on a filesystem every node sees");
    };
    let scratch = Scratch::new(absolute(scratch, &world.cwd));
    let mode = match (&args.rerun, args.finish) {
        (Some(_), _) => Mode::Rerun,
        (None, true) => Mode::Finish,
        (None, false) => Mode::Submit,
    };
    let op = op(args, world, &scratch, mode);
    let record_dir = protocol::env::record_folder_given(
        args.record_dir.as_deref().map(Path::as_os_str),
        world.env.get_os(protocol::env::RECORD_DIR),
    )
    .map(|(dir, source)| discover::checked_record_dir(absolute(&dir, &world.cwd), source))
    .transpose()?;
    let mut out = Output::default();
    out.set(
        "mode",
        match mode {
            Mode::Submit => "submit",
            Mode::Rerun => "rerun",
            Mode::Finish => "finish",
        },
    )
    .set("scratch", scratch.root())
    .set("op", &op)
    .set("record_dir", record_dir.as_deref().unwrap_or(Path::new("")))
    .set("wait_for_it", if args.wait { "1" } else { "0" })
    .set("slurm_dir", scratch.slurm())
    .set("shard_script", scratch.shard_sbatch())
    .set("finish_script", scratch.finish_sbatch())
    .set("jobs_file", scratch.slurm_jobs());
    match mode {
        Mode::Rerun => rerun(args, &scratch, &mut out)?,
        Mode::Finish => finish(args, &scratch)?,
        Mode::Submit => submit(args, world, &scratch, &op, record_dir.as_deref(), &mut out)?,
    }
    if mode != Mode::Finish
        && protocol::command::check_program(OsStr::new("sbatch"), world.lookup.path.as_deref())
            .is_err()
    {
        return Err(Refused(
            "sbatch not found: run this on a Slurm login node (or load Slurm's module)".into(),
        )
        .into());
    }
    // The finishing job runs in one of the scratch's own jobs: that one is not in the way.
    let own = (mode == Mode::Finish)
        .then(|| world.env.get(ENV_JOB_ID))
        .flatten();
    crate::jobs::refuse_if_queued(&scratch, own)?;
    Ok(out)
}

/// The op of the run, the rule scripts/warmup's is (`protocol::op::derive`): `--op`, else
/// `FLAGGEMS_PERF_CURRENT_OP`, else what COMMAND names; `--rerun` and `--finish`, which have no
/// COMMAND, take the submitted plan's op where neither is given.
fn op(args: &Slurm, world: &World, scratch: &Scratch, mode: Mode) -> String {
    let given = args
        .op
        .as_deref()
        .or_else(|| world.var(protocol::env::CURRENT_OP));
    if mode != Mode::Submit && protocol::op::OpArg::new(given).given().is_none() {
        if let Ok((plan, _)) = ShardPlan::load(&scratch.shard_plan()) {
            return plan.op;
        }
    }
    protocol::op::derive(given, &args.command).name
}

/// The job id Slurm gives a batch job.
const ENV_JOB_ID: &str = "SLURM_JOB_ID";

/// `--finish`: no COMMAND, and a shard plan to finish.
fn finish(args: &Slurm, scratch: &Scratch) -> Result<()> {
    if !args.command.is_empty() {
        bail!("--finish takes no COMMAND");
    }
    let shard_plan = scratch.shard_plan();
    if !shard_plan.is_file() {
        return Err(Refused(format!(
            "{} is missing: submit the sweep with 'warmup-slurm --scratch {} --shards N -- \
             COMMAND' first",
            shard_plan.display(),
            scratch.root().display()
        ))
        .into());
    }
    Ok(())
}

/// `path` made absolute against `cwd`, without a trailing `/`, byte for byte.
fn absolute(path: &Path, cwd: &Path) -> PathBuf {
    toolkit::file::without_trailing_slash(toolkit::file::absolute_in(path, cwd))
}

/// `--rerun LIST`: checked against the shard plan (`SCRATCH/plan.json`), as each task will read it.
fn rerun(args: &Slurm, scratch: &Scratch, out: &mut Output) -> Result<()> {
    let shard_script = scratch.shard_sbatch();
    if !args.command.is_empty() {
        bail!(
            "--rerun takes no COMMAND: the shards run what {} runs",
            shard_script.display()
        );
    }
    let list = args.rerun.as_deref().unwrap_or_default();
    let choice = Choice::from_args(Some(list), None, |_| None)?;
    let shard_plan_path = scratch.shard_plan();
    if !shard_script.is_file() || !shard_plan_path.is_file() {
        bail!(
            "{} is missing: submit the sweep with 'warmup-slurm --scratch {} --shards N -- COMMAND' first",
            shard_script.display(),
            scratch.root().display()
        );
    }
    let (mut shard_plan, _) = ShardPlan::load(&shard_plan_path)?;
    if let Some(choice) = choice {
        choice.narrow(&mut shard_plan, &shard_plan_path)?;
    }
    out.set("rerun", list);
    Ok(())
}

fn submit(
    args: &Slurm,
    world: &World,
    scratch: &Scratch,
    op: &str,
    record_dir: Option<&Path>,
    out: &mut Output,
) -> Result<()> {
    if args.command.is_empty() {
        bail!("no COMMAND: give it after --");
    }
    let shards = match args.shards.as_deref() {
        None => bail!("--shards N is required: how many array tasks to split the shapes over"),
        Some(text) => match toolkit::cli::whole(text) {
            Some(n) => n,
            None => bail!("--shards '{text}' is not a whole number"),
        },
    };
    if shards < 2 {
        bail!("--shards {shards}: give at least 2");
    }
    let Some(shape_file) = protocol::command::shape_file_of(&args.command).map(PathBuf::from)
    else {
        bail!("COMMAND has no --shape_file: the sweep splits the shapes of that file");
    };
    if !world.cwd.join(&shape_file).is_file() {
        bail!(
            "COMMAND's --shape_file {}: no such file",
            shape_file.display()
        );
    }
    let mut shard = shard_argv(args, world, op, record_dir);
    shard.extend([
        "--shards".into(),
        shards.to_string().into(),
        "--out".into(),
        scratch.root().as_os_str().to_os_string(),
        "--".into(),
        shape_file.as_os_str().to_os_string(),
    ]);
    let spawn_argv = args.spawn.argv();
    let (shard_sbatch, finish_sbatch) =
        batch_scripts(args, world, scratch, op, record_dir, &spawn_argv)?;
    out.set("shards", shards.to_string())
        .set("shape_file", &shape_file)
        .set("partition", args.partition.as_deref().unwrap_or_default())
        .set("gpus_per_task", args.gpus_per_task.to_string())
        .set("time_limit", args.time.as_deref().unwrap_or_default())
        .set(
            "max_parallel",
            args.max_parallel.map(|n| n.to_string()).unwrap_or_default(),
        )
        .list(
            "sbatch_extra",
            args.sbatch_arg.iter().map(OsString::from).collect(),
        )
        .list("shard_argv", shard)
        .list("spawn_argv", spawn_argv)
        .list("command", args.command.clone())
        .set("shard_sbatch", OsStr::from_bytes(&shard_sbatch))
        .set("finish_sbatch", OsStr::from_bytes(&finish_sbatch));
    Ok(())
}

/// warmup-shard's options before `--shards`: the op, the split given, and the default split
/// scripts/warmup has: by the op's history where there is a record folder and no cost file,
/// else lpt unless a strategy was given.
fn shard_argv(args: &Slurm, world: &World, op: &str, record_dir: Option<&Path>) -> Vec<OsString> {
    let mut shard: Vec<OsString> = vec!["--op".into(), op.into()];
    shard.extend(args.split.argv());
    match (record_dir, &args.split.costs) {
        (Some(dir), None) => {
            let python = protocol::command::python_of(&args.command, world.lookup.path.as_deref());
            let platform = Platform {
                triton: python.and_then(|p| protocol::python::packages(&p, &world.lookup).triton),
                device: None,
            };
            shard.extend(["--history".into(), dir.as_os_str().to_os_string()]);
            if let Some(v) = platform.triton {
                shard.extend(["--triton".into(), v.into()]);
            }
            // Each task's GPU is the scheduler's: its model is not known on the login node.
            shard.extend(["--devices".into(), "0".into()]);
        }
        _ if args.split.strategy.is_none() => shard.extend(["--strategy".into(), "lpt".into()]),
        _ => {}
    }
    shard
}

/// The text of the array's and the finishing job's batch scripts (`batch`); an option no batch
/// script can hold is a usage error, found before Slurm is looked for.
fn batch_scripts(
    args: &Slurm,
    world: &World,
    scratch: &Scratch,
    op: &str,
    record_dir: Option<&Path>,
    spawn_argv: &[OsString],
) -> Result<(Vec<u8>, Vec<u8>)> {
    let spawn = toolkit::tools::find("warmup-spawn").map_err(|e| Refused(format!("{e:#}")))?;
    let script = match world.env.get_os(SCRIPT).filter(|s| !s.is_empty()) {
        Some(script) => PathBuf::from(script),
        None => spawn.with_file_name("warmup-slurm"),
    };
    let cwd = shell_cwd(world);
    let batch = Batch {
        op,
        scratch,
        cwd: &cwd,
        options: args
            .partition
            .iter()
            .map(|p| format!("--partition={p}"))
            .chain(args.sbatch_arg.iter().cloned())
            .collect(),
        spawn: &spawn,
        script: &script,
        gpus_per_task: args.gpus_per_task,
        time: args.time.as_deref(),
        spawn_argv,
        command: &args.command,
        record_dir,
    };
    Ok((batch.shard_script()?, batch.finish_script()?))
}

/// The folder warmup-slurm was run in as its shell names it (`PWD`, links kept, where that is
/// this folder), else as the system does: the jobs start there.
fn shell_cwd(world: &World) -> PathBuf {
    use std::os::unix::fs::MetadataExt;
    let same = |a: &Path, b: &Path| match (a.metadata(), b.metadata()) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    };
    world
        .env
        .get_os("PWD")
        .map(PathBuf::from)
        .filter(|pwd| pwd.is_absolute() && same(pwd, &world.cwd))
        .unwrap_or_else(|| world.cwd.clone())
}
