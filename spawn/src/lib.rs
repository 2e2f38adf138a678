//! `warmup-spawn`: runs a command once per shard of a plan, each child pinned to one device, at
//! most one child per listed device at a time, and supervises them to the end: timeouts, signals,
//! process groups, status files, progress.
//!
//! Linux only: it relies on signalfd, PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER and `/proc`.
//!
//! This file is the dispatch: [`Mode::of`] says which of the six modes this invocation is, and
//! [`run`] routes it. The command line is `flags`'s. The rest is two wings named after the data
//! flow: `sweep` (the plan read into jobs, and the children supervised to their end: its module
//! doc) and `measure` (`--measure`'s and `--finish`'s run after the sweep, as typed phases, with
//! the tools and the measurement supervised as jobs: its module doc); `signal` is both wings'.
//! The devices (`protocol::backend`) and what COMMAND runs (`protocol::command`) are protocol's:
//! warmup-plan reads them alike. Public: [`Args`], [`TOOL`], [`Mode`] and [`run`]; no module
//! names [`Args`]: each takes what it needs of it, typed.

mod flags;

mod measure;
mod signal;
mod sweep;

pub use flags::{Args, TOOL};

use anyhow::{bail, Context, Result};
use protocol::backend;
use protocol::layout::Scratch;
use std::io::Write;
use std::path::{Path, PathBuf};
use toolkit::Status;

/// What one invocation does, decided from the arguments alone before anything is read or
/// started (as ripgrep's `Mode`): each is one function below, and [`run`] is one match.
#[derive(Debug, Clone, Copy)]
pub enum Mode<'a> {
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
    /// `--finish`: merge, judge and publish shards that ran elsewhere.
    Finish(&'a Args),
}

impl<'a> Mode<'a> {
    /// The mode `args` asks for (clap has refused the combinations that conflict).
    pub fn of(args: &'a Args) -> Mode<'a> {
        if let Some(scratch) = &args.lock_scratch {
            Mode::LockScratch(scratch)
        } else if args.list_devices {
            Mode::ListDevices(args)
        } else if args.dry_run {
            Mode::DryRun(args)
        } else if args.measure {
            Mode::Measure(args)
        } else if args.finish {
            Mode::Finish(args)
        } else {
            Mode::Run(args)
        }
    }
}

pub fn run(args: &Args) -> Result<Status> {
    // Before anything else: if the caller dies from here on, the run stops (`signal`).
    let parent = nix::unistd::getppid();
    let env = backend::Environment::current();
    match Mode::of(args) {
        Mode::LockScratch(scratch) => {
            Scratch::new(scratch).lock_for_caller(TOOL)?;
            Ok(Status::Done)
        }
        Mode::ListDevices(args) => list_devices(args, &env),
        Mode::DryRun(args) => match sweep::prepare::prepare(&request(args), &env)? {
            Some(prepared) => sweep::shell::dry_run(&prepared),
            None => Ok(Status::NothingToDo),
        },
        Mode::Run(args) => match sweep::prepare::prepare(&request(args), &env)? {
            Some(prepared) => {
                sweep::alone(&prepared, limits(args), args.summary.as_deref(), parent)
            }
            None => Ok(Status::NothingToDo),
        },
        Mode::Measure(args) => measure(args, &env, parent),
        Mode::Finish(args) => finish(args, parent),
    }
}

/// `--finish`: the plan's scratch and op, checked as a run's are.
fn finish(args: &Args, parent: nix::unistd::Pid) -> Result<Status> {
    let plan_arg = args
        .plan
        .as_deref()
        .context("--finish needs --plan SCRATCH")?;
    let plan_file = plan_arg
        .is_dir()
        .then(|| Scratch::new(plan_arg).shard_plan());
    let plan_path = plan_file.as_deref().unwrap_or(plan_arg);
    let (plan, scratch) = protocol::shard_plan::ShardPlan::load(plan_path)?;
    let op = args.op.for_shard_plan(&plan, plan_path)?;
    let record_dir = record_folder(args);
    let req = measure::finish::Request {
        scratch: scratch.root(),
        op,
        record_dir: record_dir.as_deref(),
        grace: args.grace,
    };
    measure::finish::run(&req, parent)
}

/// `--measure`: what keeps the sweep from running is a reason to measure COMMAND plain, as the
/// caller would have run it: `--measure` always ends in COMMAND's status.
fn measure(args: &Args, env: &backend::Environment, parent: nix::unistd::Pid) -> Result<Status> {
    if args.summary.as_deref() == Some(Path::new("-")) {
        bail!("--measure: stdout is the measurement's; give --summary a file, not -");
    }
    let record_dir = record_folder(args);
    let opts = measure::Options {
        command: &args.command,
        limits: limits(args),
        record_dir: record_dir.as_deref(),
        discard_scratch: args.discard_scratch,
        summary: args.summary.as_deref(),
        fresh: args.fresh,
        signature: args.signature.as_deref(),
        measure_after: args.measure_after,
    };
    match sweep::prepare::prepare(&request(args), env) {
        Ok(Some(prepared)) => measure::run(&opts, &prepared, parent),
        Ok(None) => Ok(measure::plain(
            &args.command,
            "the plan has no shards to sweep",
        )),
        Err(e) if args.command.is_empty() || e.is::<sweep::prepare::OpConflict>() => Err(e),
        Err(e) => {
            eprintln!("{TOOL}: {e:#}");
            Ok(measure::plain(
                &args.command,
                "the sweep could not run (see above)",
            ))
        }
    }
}

/// What `args` asks of the run's preparation.
fn request(args: &Args) -> sweep::prepare::Request<'_> {
    sweep::prepare::Request {
        op: &args.op,
        plan: args.plan.as_deref(),
        devices: args.devices.as_deref(),
        backend: &args.backend,
        cache_per_child: args.cache_per_child,
        summary: args.summary.as_deref(),
        only: args.only.as_deref(),
        index_from_env: args.index_from_env.as_deref(),
        measure: args.measure,
        command: &args.command,
        resume: protocol::env::resume_env(args.fresh, resume_from(args).as_deref()),
    }
}

/// `--measure`'s and `--finish`'s record folder: the one rule (`protocol::env::record_folder`).
fn record_folder(args: &Args) -> Option<PathBuf> {
    protocol::env::record_folder(
        args.record_dir.as_deref().map(Path::as_os_str),
        std::env::var_os(protocol::env::RECORD_DIR).as_deref(),
    )
}

/// The record the children resume from: `--resume-dir`, else under `--measure` the record
/// folder (the rule of "Resume": a record session resumes from its record folder).
fn resume_from(args: &Args) -> Option<std::ffi::OsString> {
    let dir = args
        .resume_dir
        .clone()
        .or_else(|| args.measure.then(|| record_folder(args)).flatten())?;
    Some(dir.into_os_string())
}

fn limits(args: &Args) -> sweep::supervisor::Limits {
    sweep::supervisor::Limits {
        timeout: args.timeout,
        grace: args.grace,
        max_log: args.max_log,
    }
}

fn list_devices(args: &Args, env: &backend::Environment) -> Result<Status> {
    let backend = backend::select_for(&args.backend, env, args.devices.is_some())?;
    let devices = backend::devices(backend, args.devices.as_deref(), env)?;
    let mut out = std::io::stdout().lock();
    for d in devices {
        writeln!(out, "{d}").context("writing to stdout")?;
    }
    Ok(Status::Done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn mode(args: &[&str]) -> String {
        let args = Args::try_parse_from(args).expect("valid arguments");
        let mode = format!("{:?}", Mode::of(&args));
        mode[..mode.find('(').unwrap_or(mode.len())].to_owned()
    }

    #[test]
    fn each_invocation_is_one_mode() {
        let spawn = "warmup-spawn";
        assert_eq!(mode(&[spawn, "--list-devices"]), "ListDevices");
        assert_eq!(
            mode(&[spawn, "--plan", "p", "--dry-run", "--", "pytest"]),
            "DryRun"
        );
        assert_eq!(mode(&[spawn, "--plan", "p", "--", "pytest"]), "Run");
        assert_eq!(mode(&[spawn, "--lock-scratch", "s"]), "LockScratch");
        assert_eq!(
            mode(&[spawn, "--plan", "p", "--measure", "--", "pytest"]),
            "Measure"
        );
        assert_eq!(mode(&[spawn, "--plan", "p", "--finish"]), "Finish");
    }
}
