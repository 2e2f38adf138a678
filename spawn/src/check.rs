//! `warmup-spawn --check-args ARGS...` (toolkit::cli): the checks of its arguments that the
//! parser cannot make, so that a script composing the tools refuses a typo in an option it passes
//! on (exit 2) before anything runs, rather than finding it after the skip rules and falling back
//! to the plain run: the backend's name, the syntax of `--devices`, and, with `--plan`, the op and
//! a `--only` list against that plan. It reads the plan and nothing else; it probes no device.

use crate::{backend, select, Args};
use anyhow::Result;
use clap::FromArgMatches;
use protocol::layout::Scratch;
use protocol::plan::Plan;

/// Checks the arguments `--check-args` parsed; an error is the usage error the run would give.
pub fn args(matches: &clap::ArgMatches) -> Result<()> {
    let args = Args::from_arg_matches(matches)?;
    if args.backend.trim() != "auto" {
        backend::select(&args.backend, &backend::Environment::current())?;
    }
    if let Some(list) = &args.devices {
        backend::parse_list(list)?;
    }
    let Some(plan_arg) = &args.plan else {
        return Ok(());
    };
    let plan_file = plan_arg.is_dir().then(|| Scratch::new(plan_arg).plan());
    let plan_path = plan_file.as_deref().unwrap_or(plan_arg);
    let (mut plan, _) = Plan::load(plan_path)?;
    args.op.for_plan(&plan, plan_path)?;
    if let Some(choice) = select::Choice::from_args(args.only.as_deref(), None, |_| None)? {
        choice.narrow(&mut plan, plan_path)?;
    }
    Ok(())
}
