//! `warmup-spawn`: runs a command once per shard of a plan, each child pinned to one device, at
//! most one child per listed device at a time, and supervises them to the end: timeouts, signals,
//! process groups, status files, progress.
//!
//! Linux only: it relies on signalfd, PR_SET_PDEATHSIG and PR_SET_CHILD_SUBREAPER.

pub mod backend;
pub mod job;
pub mod progress;
pub mod shell;
pub mod signal;
pub mod status;
pub mod supervisor;

use anyhow::{bail, Context, Result};
use protocol::layout::Scratch;
use protocol::plan::Plan;
use protocol::Status;
use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub const TOOL: &str = "warmup-spawn";

const EXAMPLES: &str = "EXAMPLES:
  # one pytest per shard, on the GPUs the caller may use
  warmup-spawn --plan /tmp/run/plan.json -- pytest benchmark/test_mm.py --shape_file shapes.yaml

  # pick the devices; a device listed twice takes two children at once
  warmup-spawn --plan /tmp/run/plan.json --devices 4,5,6,7 --timeout 3600 -- pytest ...

  # see what would run, as copy-pastable env lines; runs and writes nothing
  warmup-spawn --plan /tmp/run/plan.json --dry-run -- pytest ...

  # the device tokens a run would use
  CUDA_VISIBLE_DEVICES=GPU-8f2a,GPU-77c1 warmup-spawn --list-devices

BACKENDS (--backend; auto: FLAGGEMS_VENDOR, else the visibility variable that is set, else a probe):
  cuda CUDA_VISIBLE_DEVICES | rocm HIP_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES |
  ascend ASCEND_RT_VISIBLE_DEVICES | cambricon MLU_VISIBLE_DEVICES | mthreads MUSA_VISIBLE_DEVICES |
  metax MACA_VISIBLE_DEVICES | kunlunxin XPU_VISIBLE_DEVICES | enflame TOPS_VISIBLE_DEVICES |
  iluvatar CUDA_VISIBLE_DEVICES

FILES:
  SCRATCH/w<i>/worker.log   child i's stdout and stderr (truncated at its start)
  SCRATCH/w<i>/rec/         child i's FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR
  SCRATCH/w<i>/status.json  child i's outcome; absent when the shard never started";

/// Run one pinned, supervised child per shard over a device pool.
#[derive(Debug, clap::Parser)]
#[command(
    name = TOOL,
    version,
    about,
    after_long_help = protocol::cli::after_help(EXAMPLES)
)]
pub struct Args {
    /// The plan warmup-shard wrote (SCRATCH/plan.json)
    #[arg(long, value_name = "PLAN", required_unless_present = "list_devices")]
    pub plan: Option<PathBuf>,

    /// Device tokens, comma-separated, as the runtime spells them (0, GPU-<uuid>, MIG-<uuid>);
    /// default: the backend's visibility variable, else every device the backend probes
    #[arg(long, value_name = "LIST")]
    pub devices: Option<String>,

    /// auto, a backend name (cuda, rocm, ascend, cambricon, mthreads, metax, kunlunxin, enflame,
    /// iluvatar) or a FlagGems vendor name (nvidia, amd, hygon, ...)
    #[arg(long, value_name = "NAME", default_value = "auto")]
    pub backend: String,

    /// Stop a child (SIGTERM to its process group, then SIGKILL after --grace) that runs longer
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    pub timeout: Option<Duration>,

    /// Seconds between SIGTERM and SIGKILL when stopping children
    #[arg(long, value_name = "SECS", value_parser = seconds, default_value = "10")]
    pub grace: Duration,

    /// Print each shard's device, environment changes and argv as `env` lines; run nothing
    #[arg(long)]
    pub dry_run: bool,

    /// Print the device tokens a run would use, one per line, and exit
    #[arg(long, conflicts_with_all = ["plan", "dry_run", "timeout", "command"])]
    pub list_devices: bool,

    /// The command each child runs; its --shape_file is replaced by the shard's
    #[arg(
        value_name = "COMMAND",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub command: Vec<OsString>,
}

fn seconds(text: &str) -> std::result::Result<Duration, String> {
    let n: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !(n.is_finite() && n > 0.0) {
        return Err(format!("{text:?}: give a positive number of seconds"));
    }
    Duration::try_from_secs_f64(n).map_err(|e| format!("{text:?}: {e}"))
}

pub fn run(args: &Args) -> Result<Status> {
    let env = backend::Environment::current();
    if args.list_devices {
        let backend = backend::select(&args.backend, &env)?;
        let devices = backend::devices(backend, args.devices.as_deref(), &env)?;
        let mut out = std::io::stdout().lock();
        for d in devices {
            writeln!(out, "{d}").context("writing to stdout")?;
        }
        return Ok(Status::Done);
    }

    let plan_path = args
        .plan
        .as_deref()
        .context("--plan is required: give the plan.json warmup-shard wrote")?;
    let (plan, scratch) = Plan::load(plan_path)?;
    let root = std::path::absolute(scratch.root())
        .with_context(|| format!("resolving {}", scratch.root().display()))?;
    let scratch = Scratch::new(root);
    let jobs = jobs(&plan, &scratch, plan_path)?;
    if args.command.is_empty() {
        bail!(
            "no COMMAND: give it after --, e.g. warmup-spawn --plan {} -- pytest ...",
            plan_path.display()
        );
    }
    check_command(&args.command[0])?;
    let backend = backend::select(&args.backend, &env)?;
    let devices = backend::devices(backend, args.devices.as_deref(), &env)?;
    if jobs.is_empty() {
        eprintln!(
            "{TOOL}: {}: the plan has no shards; nothing to run",
            plan_path.display()
        );
        return Ok(Status::NothingToDo);
    }

    if args.dry_run {
        let mut out = std::io::stdout().lock();
        for (i, job) in jobs.iter().enumerate() {
            let device = &devices[i % devices.len()];
            let argv = job::lossy(&job.argv(&args.command));
            writeln!(out, "# shard {} on device {device}", job.shard)
                .and_then(|()| {
                    writeln!(out, "{}", shell::env_line(&job.env(backend, device), &argv))
                })
                .context("writing to stdout")?;
        }
        return Ok(Status::Done);
    }

    // Before any child starts, so that a shard a signal keeps from starting leaves nothing
    // of an earlier run behind either: a missing status.json means "not started".
    for job in &jobs {
        scratch.clear_outputs(job.shard)?;
    }

    let signals = signal::Signals::install()?;
    let mut progress = progress::Progress::new(&devices);
    let limits = supervisor::Limits {
        timeout: args.timeout,
        grace: args.grace,
    };
    let t0 = Instant::now();
    let outcome = supervisor::supervise(
        &jobs,
        &args.command,
        backend,
        &devices,
        limits,
        &signals,
        &mut progress,
    )?;
    progress.summary(&outcome.statuses, jobs.len(), t0.elapsed());
    Ok(match outcome.stopped_by {
        Some(sig) => Status::Signalled(sig as i32),
        None if outcome.write_failed || outcome.statuses.iter().any(|s| !s.ok()) => Status::Partial,
        None => Status::Done,
    })
}

/// One job per shard, its shape file checked to exist, in the order the pool starts them:
/// longest expected cost first where the plan has costs (so that with more shards than devices
/// the long ones do not start last), else shard order.
fn jobs(plan: &Plan, scratch: &Scratch, plan_path: &Path) -> Result<Vec<job::Job>> {
    let mut order: Vec<&protocol::plan::Shard> = plan.shards.iter().collect();
    order.sort_by(|a, b| {
        let cost = |s: &protocol::plan::Shard| s.expected_cost.unwrap_or(0.0);
        cost(b).total_cmp(&cost(a))
    });
    order
        .into_iter()
        .map(|shard| {
            let shape = scratch.root().join(&shard.shape_file);
            if !shape.is_file() {
                bail!(
                    "{}: shard {}'s shape file {} is missing; rewrite the plan with warmup-shard",
                    plan_path.display(),
                    shard.index,
                    shape.display()
                );
            }
            Ok(job::Job::new(scratch, shard.index, shape))
        })
        .collect()
}

/// Refuses a COMMAND that cannot run, before any child starts.
fn check_command(program: &OsStr) -> Result<()> {
    let path = Path::new(program);
    let runnable =
        |p: &Path| p.is_file() && nix::unistd::access(p, nix::unistd::AccessFlags::X_OK).is_ok();
    if program.as_encoded_bytes().contains(&b'/') {
        if !path.exists() {
            bail!("COMMAND {}: no such file", path.display());
        }
        if !runnable(path) {
            bail!(
                "COMMAND {}: not an executable file; check its permissions",
                path.display()
            );
        }
        return Ok(());
    }
    let search = std::env::var_os("PATH").unwrap_or_default();
    if std::env::split_paths(&search).any(|dir| runnable(&dir.join(path))) {
        return Ok(());
    }
    bail!(
        "COMMAND {:?} not found in PATH (or not executable); give its path or fix PATH",
        program.to_string_lossy()
    )
}
