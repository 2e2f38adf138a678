//! What a run is, read and checked before anything is written or started: the plan (narrowed to
//! the chosen shards), its scratch, one job per shard in start order, and the devices. A dry
//! run prints it, a run starts it; the same refusals (exit 2) come before either, so that a run
//! refused leaves nothing behind.

use crate::sweep::{by_key, job, process, select, status};
use anyhow::{bail, Context, Result};
use protocol::backend;
use protocol::layout::Scratch;
use protocol::op::OpArg;
use protocol::shard_plan::ShardPlan;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A caller's op (`--op`, else `FLAGGEMS_PERF_CURRENT_OP`) that is not the plan's: a usage error
/// (exit 2) even with `--measure`, which otherwise runs COMMAND when the sweep cannot run, since
/// COMMAND would measure one op while the children recorded another.
#[derive(Debug)]
pub struct OpConflict(String);

impl std::fmt::Display for OpConflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OpConflict {}

/// What the command line asks of a run, as [`prepare`] reads it.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub op: &'a OpArg,
    pub plan: Option<&'a Path>,
    pub devices: Option<&'a str>,
    pub backend: &'a str,
    pub cache_per_child: bool,
    pub summary: Option<&'a Path>,
    pub only: Option<&'a str>,
    pub index_from_env: Option<&'a str>,
    /// `--measure`: the run summary is the measurement's to write, even for a plan with no shard.
    pub measure: bool,
    pub command: &'a [OsString],
    /// The children's fresh/resume variable (`protocol::env::resume_env`).
    pub resume: Option<(&'static str, OsString)>,
}

/// A run, ready to start.
#[derive(Debug)]
pub struct PreparedRun {
    pub plan: ShardPlan,
    pub scratch: Scratch,
    pub choice: Option<select::Choice>,
    /// In the order the pool starts them.
    pub jobs: Vec<job::Job>,
    pub devices: Vec<String>,
    /// The run's name, in every child's marker (`process`).
    pub run_id: String,
}

/// Reads and checks everything a run needs, writing nothing; `None` (after saying so, and
/// writing the summary) when the plan has no shards.
pub fn prepare(req: &Request<'_>, env: &backend::Environment) -> Result<Option<PreparedRun>> {
    let plan_arg = req
        .plan
        .context("--plan is required: give the plan.json warmup-shard wrote")?;
    // A SCRATCH folder stands for its plan: a script composing the tools names no file in it.
    let plan_file = plan_arg
        .is_dir()
        .then(|| Scratch::new(plan_arg).shard_plan());
    let plan_path = plan_file.as_deref().unwrap_or(plan_arg);
    let (mut plan, scratch) = ShardPlan::load(plan_path)?;
    req.op
        .for_shard_plan(&plan, plan_path)
        .map_err(|e| OpConflict(format!("{e:#}")))?;
    let root = std::path::absolute(scratch.root())
        .with_context(|| format!("resolving {}", scratch.root().display()))?;
    let scratch = Scratch::new(root);
    let choice =
        select::Choice::from_args(req.only, req.index_from_env, |var| std::env::var_os(var))?;
    if let Some(choice) = &choice {
        choice.narrow(&mut plan, plan_path)?;
    }
    if req.command.is_empty() {
        bail!(
            "no COMMAND: give it after --, e.g. warmup-spawn --plan {} -- pytest ...",
            plan_path.display()
        );
    }
    protocol::command::check_program(&req.command[0], std::env::var_os("PATH").as_deref())?;
    let backend = backend::select_for(req.backend, env, req.devices.is_some())?;
    let devices = backend::devices(backend, req.devices, env)?;
    if plan.by_key() {
        by_key::check_devices(&plan, plan_path, &devices)?;
    }
    let run_id = process::run_id();
    let settings = job::RunSettings {
        children: plan.shards.len().min(devices.len()),
        cache_per_child: req.cache_per_child,
        claims: plan.by_key().then(|| scratch.claims()),
        op: plan.op.clone(),
        resume: req
            .resume
            .as_ref()
            .map(|(name, value)| (*name, value.to_string_lossy().into_owned())),
    };
    let start = JobStart {
        plan_path,
        command: req.command,
        backend,
        run_id: &run_id,
        settings,
    };
    let mut jobs = jobs(&plan, &scratch, &start)?;
    if let Some(choice) = &choice {
        select::place(choice, &mut jobs, req.devices.is_some(), &devices);
    }
    if let Some(target) = req.summary {
        check_summary(target, &plan, &jobs)?;
    }
    if jobs.is_empty() {
        eprintln!(
            "{}: {}: the plan has no shards; nothing to run",
            crate::flags::TOOL,
            plan_path.display()
        );
        if !req.measure {
            write_summary(req.summary, &plan, &jobs, &[], Duration::ZERO)?;
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

/// Takes the scratch for the run `prepared`, and clears the chosen shards' outputs: the whole
/// scratch, or a shared hold on it and each chosen shard (`select`).
pub fn hold_scratch(prepared: &PreparedRun) -> Result<select::ScratchHold> {
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

/// Writes the run summary of the sweep to `target`, when one was asked for.
pub fn write_summary(
    target: Option<&Path>,
    plan: &ShardPlan,
    jobs: &[job::Job],
    statuses: &[protocol::status::ShardStatus],
    wall: Duration,
) -> Result<()> {
    match target {
        Some(target) => status::summary(&plan.op, jobs, statuses, wall)?
            .write(target)
            .with_context(|| format!("writing the run summary to {}", target.display())),
        None => Ok(()),
    }
}

/// What every job of a run shares.
struct JobStart<'a> {
    plan_path: &'a Path,
    command: &'a [OsString],
    backend: &'static backend::Backend,
    run_id: &'a str,
    settings: job::RunSettings,
}

/// One job per shard, its shape file checked to exist, in the order the pool starts them:
/// longest expected cost first where the plan has costs (so that with more shards than devices
/// the long ones do not start last), else shard order.
fn jobs(plan: &ShardPlan, scratch: &Scratch, start: &JobStart<'_>) -> Result<Vec<job::Job>> {
    let mut order: Vec<&protocol::shard_plan::Shard> = plan.shards.iter().collect();
    order.sort_by(|a, b| {
        let cost = |s: &protocol::shard_plan::Shard| s.expected_cost.unwrap_or(0.0);
        cost(b).total_cmp(&cost(a))
    });
    order
        .into_iter()
        .map(|shard| {
            let shape: Option<PathBuf> =
                (!plan.by_key()).then(|| scratch.root().join(&shard.shape_file));
            if let Some(shape) = shape.as_ref().filter(|s| !s.is_file()) {
                bail!(
                    "{}: shard {}'s shape file {} is missing; rewrite the plan with warmup-shard",
                    start.plan_path.display(),
                    shard.index,
                    shape.display()
                );
            }
            let marker = process::Marker::new(start.run_id, shard.index);
            let mut job = job::Job::new(
                scratch,
                shard.index,
                shape,
                start.command,
                start.backend,
                marker,
                start.settings.clone(),
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
fn check_summary(target: &Path, plan: &ShardPlan, jobs: &[job::Job]) -> Result<()> {
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
