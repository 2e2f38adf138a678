//! `warmup-plan`: the one planning step of scripts/warmup and scripts/warmup-slurm. It parses
//! its own options and the driver's (`cli`, `flags`, clap: a typo is a usage error, exit 2),
//! discovers once what the run is made of (`discover`), and returns one typed decision with its
//! reason (`decision`): COMMAND plain, reusing the record, one process recording, or a sweep
//! with its plan. Deciding makes nothing; the step that acts on the decision makes the record
//! cache's folder the run uses (`discover::Discovery::act`). The drivers `eval` what it prints (`--format
//! sh`) and only compose the steps it names (docs/CONTRACT.md, "warmup-plan").
//!
//! Its own options come first: `warmup-plan [--format sh|json] [--for warmup|warmup-slurm]
//! DRIVER-OPTIONS... [-- COMMAND...]`, and `--completions SHELL --for DRIVER` or
//! `--man --for DRIVER` print the driver's completion script or man page, generated from the
//! same clap definitions.

mod batch;
mod cache;
pub mod cli;
pub mod decision;
pub mod discover;
pub mod flags;
mod jobs;
mod output;
pub mod refusal;
mod slurm;

use anyhow::{Context, Result};
use clap::{CommandFactory, Parser};
use cli::{Own, Parsed};
use discover::World;
use flags::Driver;
pub use flags::TOOL;
use output::{Format, Output};
use refusal::Refusal;
use std::ffi::OsString;
use std::io::Write;

/// What warmup-plan prints on stdout.
#[derive(Debug)]
pub enum Answer {
    /// The driver's assignments, or its help as `decision=help`, in the format asked.
    Plan(Output, Format),
    /// Printed as it is: warmup-plan's help or version, a completion script, a man page.
    Text(Vec<u8>),
}

impl Answer {
    pub fn write(&self) -> Result<()> {
        let bytes = match self {
            Answer::Plan(out, format) => out.render(*format),
            Answer::Text(text) => text.clone(),
        };
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(&bytes)
            .and_then(|()| stdout.flush())
            .context("writing to stdout")
    }
}

/// The tool's run over its arguments (`argv`, without the program's name) in `world`: what to
/// print, or why nothing was decided.
pub fn run(argv: Vec<OsString>, world: &World) -> Result<Answer, Refusal> {
    // `--generate=KIND` first: warmup-plan's own completion script or man page, as every tool's.
    if let Some(kind) = argv.first().and_then(|a| toolkit::cli::generate_kind(a)) {
        return generated(Own::command(), kind);
    }
    let own = match Own::try_parse_from(std::iter::once(OsString::from(TOOL)).chain(argv.clone())) {
        Ok(own) => own,
        // --help, --version
        Err(err) if !err.use_stderr() => {
            return Ok(Answer::Text(err.render().to_string().into_bytes()))
        }
        Err(err) => return Err(Refusal::usage(TOOL, &err)),
    };
    let driver = own.driver()?;
    if let Some(shell) = &own.completions {
        return generated(driver.command(), shell);
    }
    if own.man {
        return generated(driver.command(), "man");
    }
    let prog = own.prog();
    let argv = own.driver_argv(driver, &argv);
    let out = match driver {
        Driver::Warmup => match cli::parse_driver::<flags::Warmup>(prog, argv)? {
            Parsed::Text(text) => text,
            Parsed::Args(args) => {
                runnable(prog, &args.command, world)?;
                plan(&args, world).map_err(|e| refused(prog, &e))?
            }
        },
        Driver::Slurm => match cli::parse_driver::<flags::Slurm>(prog, argv)? {
            Parsed::Text(text) => text,
            Parsed::Args(args) => slurm::plan(&args, world).map_err(|e| refused(prog, &e))?,
        },
    };
    Ok(Answer::Plan(out, own.format))
}

/// A completion script (`bash`, `zsh`, `fish`) or man page (`man`) of `cmd`.
fn generated(cmd: clap::Command, kind: &str) -> Result<Answer, Refusal> {
    let mut text = Vec::new();
    toolkit::cli::generate(cmd, kind, &mut text)
        .map(|()| Answer::Text(text))
        .map_err(|err| Refusal::usage_said(format!("{err:#}")))
}

/// scripts/warmup's COMMAND must be runnable before anything is decided, made or run: the check
/// warmup-spawn makes before its children start (`protocol::command::check_program`).
fn runnable(prog: &str, command: &[OsString], world: &World) -> Result<(), Refusal> {
    let Some(program) = command.first() else {
        return Ok(()); // clap requires COMMAND
    };
    protocol::command::check_program(program, world.lookup.path.as_deref())
        .map_err(|err| Refusal::not_found(prog, &err))
}

/// A plan that could not be made, said as `prog`'s: a usage error with the hint, unless it is no
/// usage error (`refusal::Refused`: Slurm missing, a scratch in use or not submitted to).
fn refused(prog: &str, err: &anyhow::Error) -> Refusal {
    if err.is::<refusal::Refused>() {
        Refusal::said(prog, &format!("{err:#}"))
    } else {
        Refusal::usage_text(prog, &format!("{err:#}"))
    }
}

/// scripts/warmup's plan: the decision, acted on ([`discover::Discovery::act`]), and what the steps it names
/// need.
pub fn plan(args: &flags::Warmup, world: &World) -> Result<Output> {
    let found = discover::discover(args, world)?;
    let decision = decision::decide(&found.facts);
    let (found, decision) = found.act(decision);
    Ok(output::warmup(args, &found, &decision))
}
