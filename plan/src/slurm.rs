//! scripts/warmup-slurm's plan: its mode (submit, `--rerun`, `--finish`), its options checked
//! (the shard list against the shard plan), and for a submission the shape file, the record
//! folder, and the argv of warmup-shard and warmup-spawn, with the default split scripts/warmup
//! has: lpt, by the op's history where the record folder holds one for this run, else by the
//! robust model.

use crate::discover::{self, World};
use crate::flags::Slurm;
use crate::output::Output;
use anyhow::{bail, Result};
use protocol::choice::Choice;
use protocol::layout::Scratch;
use protocol::probe::Platform;
use protocol::shard_plan::ShardPlan;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

pub fn plan(args: &Slurm, world: &World) -> Result<Output> {
    let Some(scratch) = &args.scratch else {
        bail!("--scratch DIR is required: a folder on a filesystem every node sees");
    };
    let scratch = absolute(scratch, &world.cwd);
    let op = match &args.op {
        Some(op) => protocol::op::OpArg::new(Some(op)).name().to_owned(),
        None => discover::op(world),
    };
    let mode = if args.rerun.is_some() {
        "rerun"
    } else if args.finish {
        "finish"
    } else {
        "submit"
    };
    let given = args.record_dir.as_deref().map(Path::as_os_str);
    let raw = given.or_else(|| world.env.get_os(protocol::env::RECORD_DIR));
    let record_dir = discover::record_dir(raw, &world.cwd)?;
    let mut out = Output::default();
    out.set("mode", mode)
        .set("scratch", &scratch)
        .set("op", &op)
        .set("record_dir", record_dir.as_deref().unwrap_or(Path::new("")))
        .set("wait_for_it", if args.wait { "1" } else { "0" });
    match mode {
        "rerun" => rerun(args, &scratch, &mut out)?,
        "finish" => {
            if !args.command.is_empty() {
                bail!("--finish takes no COMMAND");
            }
        }
        _ => submit(args, world, &scratch, &op, record_dir.as_deref(), &mut out)?,
    }
    Ok(out)
}

/// `path` made absolute against `cwd`, without a trailing `/`, byte for byte.
fn absolute(path: &Path, cwd: &Path) -> PathBuf {
    toolkit::file::without_trailing_slash(toolkit::file::absolute_in(path, cwd))
}

/// `--rerun LIST`: checked against the shard plan (`SCRATCH/plan.json`) as each task reads it.
fn rerun(args: &Slurm, scratch: &Path, out: &mut Output) -> Result<()> {
    if !args.command.is_empty() {
        bail!(
            "--rerun takes no COMMAND: the shards run what {}/slurm/shard.sbatch runs",
            scratch.display()
        );
    }
    let list = args.rerun.as_deref().unwrap_or_default();
    let choice = Choice::from_args(Some(list), None, |_| None)?;
    let shard_plan_path = Scratch::new(scratch).shard_plan();
    let shard_script = scratch.join("slurm/shard.sbatch");
    if !shard_script.is_file() || !shard_plan_path.is_file() {
        bail!(
            "{} is missing: submit the sweep with 'warmup-slurm --scratch {} --shards N -- COMMAND' first",
            shard_script.display(),
            scratch.display()
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
    scratch: &Path,
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
    shard.extend([
        "--shards".into(),
        shards.to_string().into(),
        "--out".into(),
        scratch.as_os_str().to_os_string(),
        "--".into(),
        shape_file.as_os_str().to_os_string(),
    ]);
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
        .list("spawn_argv", args.spawn.argv())
        .list("command", args.command.clone());
    Ok(())
}
