//! `warmup-spawn`: runs a command once per shard of a plan, each child pinned to one device, at
//! most one child per listed device at a time, and supervises them to the end: timeouts, signals,
//! process groups, status files, progress.
//!
//! Linux only: it relies on signalfd, PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER and `/proc`.
//!
//! The modules: `job` (a shard's child, resolved), `supervisor` (the run's
//! loop) over `child` (one child's life), `process` (groups, markers, orphans), `signal`,
//! `watchdog` (what stops the children if warmup-spawn is killed), `log` (a child's output),
//! `status` (a child's status.json as it starts, and the run summary; the file's type and the
//! outcome rule are `protocol::status`'s), `progress` (what a person sees), `shell`
//! (`--dry-run` lines), `select` (which shards run: `--only`, `--index-from-env`, and what such a
//! run holds on the scratch). With `--measure`: `flow` (the run after the plan, the measurement
//! included), `measurement` (the measurement as a supervised job), `gate` (its pipe, and what it
//! is told) and `tools` (warmup-merge, warmup-publish, warmup-costs, run as a caller would). The
//! devices (`protocol::backend`) and what COMMAND runs (`protocol::command`: whether it can start
//! with the sweep, and how) are protocol's: warmup-plan reads them alike. Nothing here is public
//! but [`Args`] and [`run`].
//!
//! [`run`] parses nothing: [`Command::of`] says which of the five things this invocation does,
//! and each is one function.

mod by_key;
mod child;
mod flow;
mod gate;
mod job;
mod log;
mod measurement;
mod process;
mod progress;
mod select;
mod shell;
mod signal;
mod status;
mod supervisor;
mod tools;
mod watchdog;

use anyhow::{bail, Context, Result};
use protocol::backend;
use protocol::layout::Scratch;
use protocol::plan::Plan;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use toolkit::Status;

pub const TOOL: &str = "warmup-spawn";

const EXAMPLES: &str = "EXAMPLES:
  # one pytest per shard, on the GPUs the caller may use (--plan /tmp/run works too)
  warmup-spawn --plan /tmp/run/plan.json -- pytest benchmark/test_mm.py --shape_file shapes.yaml

  # pick the devices; a device listed twice takes two children at once (not in a by-key plan)
  warmup-spawn --plan /tmp/run/plan.json --devices 4,5,6,7 --timeout 3600 -- pytest ...

  # see what would run, as copy-pastable env lines; runs and writes nothing
  warmup-spawn --plan /tmp/run/plan.json --dry-run -- pytest ...

  # shards 3 and 5 to 7 only (re-running failed ones: only their outputs are replaced)
  warmup-spawn --plan /tmp/run/plan.json --only 3,5-7 -- pytest ...

  # in a Slurm array task (sbatch --array=0-7): that task's shard, on the GPU Slurm gave it
  warmup-spawn --plan /shared/run/plan.json --index-from-env SLURM_ARRAY_TASK_ID -- pytest ...

  # the device tokens a run would use
  CUDA_VISIBLE_DEVICES=GPU-8f2a,GPU-77c1 warmup-spawn --list-devices

  # for a script: what happened, one `name value` line each (the contract's Run summaries)
  summary=$(warmup-spawn --plan /tmp/run/plan.json --summary - -- pytest ...)

  # a by-key plan (warmup-shard --by-key): COMMAND whole in each child, one child per device,
  # the children claiming autotune keys in SCRATCH/claims
  warmup-spawn --plan /tmp/run --devices 0,1,2,3 -- pytest benchmark/test_blas_perf.py -m mm

  # the sweep, then merge and publish, and COMMAND measured once on the configs: a pytest COMMAND
  # starts with the sweep and waits at its gate (the contract, The gate); exit: COMMAND's
  warmup-spawn --plan /tmp/run --measure --summary /tmp/run.summary --record-dir rec -- pytest ...

BACKENDS (--backend; auto: FLAGGEMS_VENDOR, else the visibility variable that is set, else a probe):
  cuda CUDA_VISIBLE_DEVICES | rocm HIP_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES |
  ascend ASCEND_RT_VISIBLE_DEVICES | cambricon MLU_VISIBLE_DEVICES | mthreads MUSA_VISIBLE_DEVICES |
  metax MACA_VISIBLE_DEVICES | kunlunxin XPU_VISIBLE_DEVICES | enflame TOPS_VISIBLE_DEVICES |
  iluvatar CUDA_VISIBLE_DEVICES

FILES:
  SCRATCH/w<i>/worker.log     child i's stdout and stderr (truncated at its start; --max-log caps it)
  SCRATCH/w<i>/rec/           child i's FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR
  SCRATCH/w<i>/status.json    child i's outcome; absent when the shard never started
  SCRATCH/w<i>/progress.json  child i's keys tuned and configs timed, which its harness keeps
                              (WARMUP_HARNESS_PROGRESS): on a terminal in the live lines, in a
                              log a line per running device every 10 s (WARMUP_SPAWN_PROGRESS_SECONDS
                              sets another interval, for tests)
  SCRATCH/claims/             a by-key plan's claims and winners (WARMUP_HARNESS_CLAIM_DIR),
                              emptied by a run of the whole plan
  SCRATCH/w<i>/.triton_cache  child i's TRITON_CACHE_DIR, with --cache-per-child only: by default
                              children share the caller's Triton cache, so each kernel is compiled
                              once for all of them, and a later run finds it compiled";

/// This tool's exit statuses (docs/CONTRACT.md, "Exit statuses").
const EXIT_STATUS: [(&str, &str); 5] = [
    ("0", "every shard ran to a good end"),
    (
        "1",
        "the shards ran and some failed: exited non-zero, timed out or did not start",
    ),
    toolkit::USAGE_ROW,
    (
        "3",
        "nothing to do: the plan has no shard to run (or a --print-* query has no answer)",
    ),
    (
        "128+N",
        "stopped by signal N, after every child was stopped and reaped",
    ),
];

/// Run one pinned, supervised child per shard over a device pool.
#[derive(Debug, clap::Parser)]
#[command(
    name = TOOL,
    version,
    about,
    after_long_help = toolkit::cli::after_help(EXAMPLES, &toolkit::exit_status_help(&EXIT_STATUS))
)]
pub struct Args {
    #[command(flatten)]
    pub op: protocol::op::OpArg,

    /// The plan warmup-shard wrote (SCRATCH/plan.json), or its SCRATCH folder
    #[arg(
        long,
        value_name = "PLAN",
        required_unless_present_any = ["list_devices", "lock_scratch"]
    )]
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
    #[arg(long, value_name = "SECS", value_parser = toolkit::cli::seconds, allow_negative_numbers = true)]
    pub timeout: Option<Duration>,

    /// Seconds between SIGTERM and SIGKILL when stopping children
    #[arg(
        long,
        value_name = "SECS",
        value_parser = toolkit::cli::seconds,
        default_value = "10",
        allow_negative_numbers = true
    )]
    pub grace: Duration,

    /// Keep at most SIZE bytes of each child's output in its worker.log (e.g. 200M, 2G); the
    /// rest is read and dropped, and the log says so [default: no limit]
    #[arg(long, value_name = "SIZE", value_parser = toolkit::cli::size, allow_negative_numbers = true)]
    pub max_log: Option<u64>,

    /// Give each child a Triton cache of its own (SCRATCH/w<i>/.triton_cache), as the pytest
    /// plugin did, instead of the caller's TRITON_CACHE_DIR, which children share by default
    #[arg(long)]
    pub cache_per_child: bool,

    /// Write the run summary (counts by outcome, seconds, each shard's outcome and log) to
    /// FILE, atomically, as the contract's "Run summaries" says (SEE ALSO); `-` is stdout
    #[arg(long, value_name = "FILE")]
    pub summary: Option<PathBuf>,

    /// Run only these shards: indices and ranges, e.g. 3, 0,4,8, 2-5; only their outputs are
    /// cleared and written
    #[arg(long, value_name = "LIST", requires = "plan")]
    pub only: Option<String>,

    /// Run only the shard whose index this variable holds (SLURM_ARRAY_TASK_ID, SLURM_PROCID,
    /// JOB_COMPLETION_INDEX); a task that sees one device keeps it as it is
    #[arg(long, value_name = "VAR", requires = "plan", conflicts_with = "only")]
    pub index_from_env: Option<String>,

    /// Print each shard's device, environment changes and argv as `env` lines; run nothing
    #[arg(long, conflicts_with = "summary")]
    pub dry_run: bool,

    /// Print the device tokens a run would use, one per line, and exit
    #[arg(long, conflicts_with_all = ["plan", "dry_run", "timeout", "command", "summary"])]
    pub list_devices: bool,

    /// Take SCRATCH's lock for the caller, on the descriptor it lends in WARMUP_SCRATCH_LOCK_FD
    /// (open on SCRATCH/.lock), and exit: the caller holds it until it closes that descriptor or
    /// ends, and the tools it runs run under it (the contract's "The scratch lock", SEE ALSO)
    #[arg(long, value_name = "SCRATCH", conflicts_with_all = ["plan", "dry_run", "list_devices", "summary", "command"])]
    pub lock_scratch: Option<PathBuf>,

    /// After the sweep, merge and publish its configs (warmup-merge, warmup-publish) and run
    /// COMMAND once, unpinned, on them: the measurement, supervised as one more job and stopped
    /// by the same rule. A pytest COMMAND starts with the sweep, with `-p warmup_harness`, and
    /// waits at its gate before its first test; any other runs after publishing. Exit status:
    /// the measurement's; 128+N when signal N stopped the run (the contract's "The gate")
    #[arg(long, requires = "plan", conflicts_with_all = ["dry_run", "only", "index_from_env"])]
    pub measure: bool,

    /// With --measure: publish into DIR (and keep the sweep's costs there) [default:
    /// $FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR when not blank, else SCRATCH/merged]
    #[arg(long, value_name = "DIR", requires = "measure")]
    pub record_dir: Option<PathBuf>,

    /// With --measure: remove SCRATCH once the measurement has ended, when nothing in it is
    /// needed (the configs published elsewhere, every shard ok, no conflict, no stop); else say
    /// where it is kept
    #[arg(long, requires = "measure")]
    pub discard_scratch: bool,

    /// With --measure: this run's signature (warmup-plan's `signature`): when every shard ends
    /// ok, warmup-publish gets `--signature SIG`, so the sidecar vouches that the record holds
    /// every key this run needs
    #[arg(long, value_name = "SIG", requires = "measure")]
    pub signature: Option<String>,

    /// The command each child runs, after `--` (as warmup takes it, so that no word of
    /// it is read as an option of this tool); its --shape_file is replaced by the shard's
    #[arg(value_name = "COMMAND", last = true)]
    pub command: Vec<OsString>,
}

/// What one invocation does, decided from the arguments alone before anything is read or
/// started (as ripgrep's `Mode`): each is one function below, and [`run`] is one match.
#[derive(Debug, Clone, Copy)]
pub enum Command<'a> {
    /// `--lock-scratch SCRATCH`: take SCRATCH's lock on the caller's descriptor.
    LockScratch(&'a Path),
    /// `--list-devices`: print the device tokens a run would use.
    ListDevices(&'a Args),
    /// `--dry-run`: print each shard's device, environment changes and argv.
    DryRun(&'a Args),
    /// Run and supervise one child per shard.
    Run(&'a Args),
    /// `--measure`: run the shards, merge, publish and measure.
    Measure(&'a Args),
}

impl<'a> Command<'a> {
    /// The command `args` asks for (clap has refused the combinations that conflict).
    pub fn of(args: &'a Args) -> Command<'a> {
        if let Some(scratch) = &args.lock_scratch {
            Command::LockScratch(scratch)
        } else if args.list_devices {
            Command::ListDevices(args)
        } else if args.dry_run {
            Command::DryRun(args)
        } else if args.measure {
            Command::Measure(args)
        } else {
            Command::Run(args)
        }
    }
}

pub fn run(args: &Args) -> Result<Status> {
    // Before anything else: if the caller dies from here on, the run stops (`signal`).
    let parent = nix::unistd::getppid();
    let env = backend::Environment::current();
    match Command::of(args) {
        Command::LockScratch(scratch) => {
            Scratch::new(scratch).lock_for_caller()?;
            Ok(Status::Done)
        }
        Command::ListDevices(args) => list_devices(args, &env),
        Command::DryRun(args) => match prepare(args, &env)? {
            Some(prepared) => dry_run(&prepared),
            None => Ok(Status::NothingToDo),
        },
        Command::Run(args) => match prepare(args, &env)? {
            Some(prepared) => supervise(args, &prepared, parent),
            None => Ok(Status::NothingToDo),
        },
        Command::Measure(args) => {
            if args.summary.as_deref() == Some(Path::new("-")) {
                bail!("--measure: stdout is the measurement's; give --summary a file, not -");
            }
            // What keeps the sweep from running is a reason to measure COMMAND plain, as the
            // caller would have run it: --measure always ends in COMMAND's status.
            match prepare(args, &env) {
                Ok(Some(prepared)) => flow::run(args, &prepared, parent),
                Ok(None) => Ok(flow::plain(args, "the plan has no shards to sweep")),
                Err(e) if args.command.is_empty() || e.is::<OpConflict>() => Err(e),
                Err(e) => {
                    eprintln!("{TOOL}: {e:#}");
                    Ok(flow::plain(args, "the sweep could not run (see above)"))
                }
            }
        }
    }
}

/// A caller's op (`--op`, else `FLAGGEMS_PERF_CURRENT_OP`) that is not the plan's: a usage error
/// (exit 2) even with `--measure`, which otherwise runs COMMAND when the sweep cannot run, since
/// COMMAND would measure one op while the children recorded another.
#[derive(Debug)]
struct OpConflict(String);

impl std::fmt::Display for OpConflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OpConflict {}

fn list_devices(args: &Args, env: &backend::Environment) -> Result<Status> {
    let backend = backend::select(&args.backend, env)?;
    let devices = backend::devices(backend, args.devices.as_deref(), env)?;
    let mut out = std::io::stdout().lock();
    for d in devices {
        writeln!(out, "{d}").context("writing to stdout")?;
    }
    Ok(Status::Done)
}

/// What a dry run prints and a run starts: the plan (narrowed to the chosen shards), its
/// scratch, one job per shard in start order, and the devices.
struct PreparedRun {
    plan: Plan,
    scratch: Scratch,
    choice: Option<select::Choice>,
    jobs: Vec<job::Job>,
    devices: Vec<String>,
    run_id: String,
}

/// Takes the scratch for the run `prepared`, and clears the chosen shards' outputs: the whole
/// scratch, or a shared hold on it and each chosen shard (`select`).
fn hold_scratch(prepared: &PreparedRun) -> Result<select::ScratchHold> {
    let (scratch, jobs) = (&prepared.scratch, &prepared.jobs);
    for job in jobs {
        check_writable(&scratch.worker(job.shard), job.shard)?;
    }
    let some: Option<Vec<usize>> = prepared
        .choice
        .as_ref()
        .map(|_| prepared.plan.shards.iter().map(|s| s.index).collect());
    let hold = select::ScratchHold::take(scratch, some.as_deref())?;
    // Before any child starts, so that a shard a signal keeps from starting leaves nothing
    // of an earlier run behind either: a missing status.json means "not started".
    for job in jobs {
        scratch.clear_outputs(job.shard).with_context(|| {
            format!("clearing what an earlier run left for shard {}", job.shard)
        })?;
    }
    if prepared.plan.by_key() {
        by_key::ready_claims(scratch, prepared.choice.is_none())?;
    }
    Ok(hold)
}

/// Reads and checks everything a run needs, writing nothing; `None` (after saying so, and
/// writing the summary) when the plan has no shards.
fn prepare(args: &Args, env: &backend::Environment) -> Result<Option<PreparedRun>> {
    let plan_arg = args
        .plan
        .as_deref()
        .context("--plan is required: give the plan.json warmup-shard wrote")?;
    // A SCRATCH folder stands for its plan: a script composing the tools names no file in it.
    let plan_file = plan_arg.is_dir().then(|| Scratch::new(plan_arg).plan());
    let plan_path = plan_file.as_deref().unwrap_or(plan_arg);
    let (mut plan, scratch) = Plan::load(plan_path)?;
    args.op
        .for_plan(&plan, plan_path)
        .map_err(|e| OpConflict(format!("{e:#}")))?;
    let root = std::path::absolute(scratch.root())
        .with_context(|| format!("resolving {}", scratch.root().display()))?;
    let scratch = Scratch::new(root);
    let choice = select::Choice::from_args(
        args.only.as_deref(),
        args.index_from_env.as_deref(),
        |var| std::env::var_os(var),
    )?;
    if let Some(choice) = &choice {
        choice.narrow(&mut plan, plan_path)?;
    }
    if args.command.is_empty() {
        bail!(
            "no COMMAND: give it after --, e.g. warmup-spawn --plan {} -- pytest ...",
            plan_path.display()
        );
    }
    protocol::command::check_program(&args.command[0], std::env::var_os("PATH").as_deref())?;
    let backend = backend::select(&args.backend, env)?;
    let devices = backend::devices(backend, args.devices.as_deref(), env)?;
    if plan.by_key() {
        by_key::check_devices(&plan, plan_path, &devices)?;
    }
    let run_id = process::run_id();
    let settings = job::RunSettings {
        children: plan.shards.len().min(devices.len()),
        cache_per_child: args.cache_per_child,
        claims: plan.by_key().then(|| scratch.claims()),
        op: plan.op.clone(),
    };
    let mut jobs = jobs(
        &plan,
        &scratch,
        plan_path,
        &args.command,
        backend,
        &run_id,
        settings,
    )?;
    if let Some(choice) = &choice {
        select::place(choice, &mut jobs, args.devices.is_some(), &devices);
    }
    if let Some(target) = &args.summary {
        check_summary(target, &plan, &jobs)?;
    }
    if jobs.is_empty() {
        eprintln!(
            "{TOOL}: {}: the plan has no shards; nothing to run",
            plan_path.display()
        );
        if !args.measure {
            write_summary(args, &plan, &jobs, &[], Duration::ZERO)?;
        }
        return Ok(None);
    }
    Ok(Some(PreparedRun {
        plan,
        scratch,
        choice,
        jobs,
        devices,
        run_id,
    }))
}

/// Prints each shard's device and its `env` line; runs nothing.
fn dry_run(prepared: &PreparedRun) -> Result<Status> {
    let devices = &prepared.devices;
    let mut out = std::io::stdout().lock();
    for (i, job) in prepared.jobs.iter().enumerate() {
        let device = &devices[i % devices.len()];
        writeln!(out, "# shard {} on device {device}", job.shard)
            .and_then(|()| {
                let argv = job::lossy(&job.argv);
                writeln!(out, "{}", shell::env_line(&job.env_on(device), &argv))
            })
            .context("writing to stdout")?;
    }
    Ok(Status::Done)
}

/// Takes the scratch, clears the chosen shards' outputs, and runs and supervises their
/// children to the end; `parent` is the caller whose death stops the run.
fn supervise(args: &Args, prepared: &PreparedRun, parent: nix::unistd::Pid) -> Result<Status> {
    let (jobs, devices) = (&prepared.jobs, &prepared.devices);
    let _hold = hold_scratch(prepared)?;

    // The watchdog first, while this is the only thread and no signal is blocked yet.
    let mut watchdog = watchdog::Watchdog::start(&prepared.run_id)?;
    let signals = signal::Signals::install(parent)?;
    let mut shutdown = signal::Shutdown::default();
    let mut progress = progress::Progress::new(devices);
    let t0 = Instant::now();
    let outcome = sweep(
        args,
        prepared,
        &signals,
        &mut shutdown,
        None,
        &mut watchdog,
        &mut progress,
    )?;
    watchdog.finish();
    let wall = t0.elapsed();
    progress.summary(&outcome.statuses, jobs.len(), wall);
    write_summary(args, &prepared.plan, jobs, &outcome.statuses, wall)?;
    Ok(match outcome.stopped_by {
        Some(sig) => Status::Signalled(sig as i32),
        None if outcome.write_failed || outcome.statuses.iter().any(|s| !s.ok()) => Status::Partial,
        None => Status::Done,
    })
}

/// Runs and supervises every job of `prepared` to the end, on its devices and within the
/// limits `args` gives, with `measurement` (`--measure`'s, started with the sweep) supervised
/// alongside: the sweep of a plain run and of a `--measure` run alike.
pub(crate) fn sweep(
    args: &Args,
    prepared: &PreparedRun,
    signals: &signal::Signals,
    shutdown: &mut signal::Shutdown,
    measurement: Option<&mut measurement::Measurement>,
    watchdog: &mut watchdog::Watchdog,
    progress: &mut progress::Progress,
) -> Result<supervisor::Outcome> {
    supervisor::supervise(
        &prepared.jobs,
        supervisor::Run {
            devices: &prepared.devices,
            limits: supervisor::Limits {
                timeout: args.timeout,
                grace: args.grace,
                max_log: args.max_log,
            },
            signals,
            shutdown,
            measurement,
            watchdog,
            progress,
            run_id: &prepared.run_id,
        },
    )
}

/// One job per shard, its shape file checked to exist, in the order the pool starts them:
/// longest expected cost first where the plan has costs (so that with more shards than devices
/// the long ones do not start last), else shard order.
fn jobs(
    plan: &Plan,
    scratch: &Scratch,
    plan_path: &Path,
    command: &[OsString],
    backend: &'static backend::Backend,
    run_id: &str,
    settings: job::RunSettings,
) -> Result<Vec<job::Job>> {
    let mut order: Vec<&protocol::plan::Shard> = plan.shards.iter().collect();
    order.sort_by(|a, b| {
        let cost = |s: &protocol::plan::Shard| s.expected_cost.unwrap_or(0.0);
        cost(b).total_cmp(&cost(a))
    });
    order
        .into_iter()
        .map(|shard| {
            let shape = (!plan.by_key()).then(|| scratch.root().join(&shard.shape_file));
            if let Some(shape) = shape.as_ref().filter(|s| !s.is_file()) {
                bail!(
                    "{}: shard {}'s shape file {} is missing; rewrite the plan with warmup-shard",
                    plan_path.display(),
                    shard.index,
                    shape.display()
                );
            }
            let marker = process::Marker::new(run_id, shard.index);
            let mut job = job::Job::new(
                scratch,
                shard.index,
                shape,
                command,
                backend,
                marker,
                settings.clone(),
            );
            // Costs in seconds (the history's, or a cost file's): the progress lines' ETA.
            if plan.cost_source.as_deref() == Some("file") {
                job.expected_seconds = shard.expected_cost;
            }
            Ok(job)
        })
        .collect()
}

/// Refuses, before anything runs, a summary that could not be written or could not name
/// everything it must.
fn check_summary(target: &Path, plan: &Plan, jobs: &[job::Job]) -> Result<()> {
    use protocol::summary::check_path;
    if target.as_os_str() != "-" {
        check_path(target)?;
        let folder = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        if !folder.is_dir() {
            bail!(
                "--summary {}: folder {} does not exist; create it or write the summary elsewhere",
                target.display(),
                folder.display()
            );
        }
    }
    if plan.op.contains('\n') {
        bail!(
            "the plan's op {:?} holds a newline, which a run summary cannot carry; drop --summary",
            plan.op
        );
    }
    jobs.iter().try_for_each(|job| check_path(&job.log))
}

fn write_summary(
    args: &Args,
    plan: &Plan,
    jobs: &[job::Job],
    statuses: &[protocol::status::ShardStatus],
    wall: Duration,
) -> Result<()> {
    match &args.summary {
        Some(target) => status::summary(&plan.op, jobs, statuses, wall)?
            .write(target)
            .with_context(|| format!("writing the run summary to {}", target.display())),
        None => Ok(()),
    }
}

/// Refuses a shard folder the children's logs, records and status cannot be written in, before
/// anything is cleared or started.
fn check_writable(folder: &Path, shard: usize) -> Result<()> {
    nix::unistd::access(folder, nix::unistd::AccessFlags::W_OK).with_context(|| {
        format!(
            "shard {shard}'s folder {} cannot be written: warmup-spawn writes each shard's log, \
             records and status there; make the scratch writable, or shard into a writable folder \
             (warmup-shard --out DIR)",
            folder.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn command(args: &[&str]) -> String {
        let args = Args::try_parse_from(args).expect("valid arguments");
        let command = format!("{:?}", Command::of(&args));
        command[..command.find('(').unwrap_or(command.len())].to_owned()
    }

    #[test]
    fn each_invocation_is_one_command() {
        let spawn = "warmup-spawn";
        assert_eq!(command(&[spawn, "--list-devices"]), "ListDevices");
        assert_eq!(
            command(&[spawn, "--plan", "p", "--dry-run", "--", "pytest"]),
            "DryRun"
        );
        assert_eq!(command(&[spawn, "--plan", "p", "--", "pytest"]), "Run");
        assert_eq!(command(&[spawn, "--lock-scratch", "s"]), "LockScratch");
        assert_eq!(
            command(&[spawn, "--plan", "p", "--measure", "--", "pytest"]),
            "Measure"
        );
    }
}
