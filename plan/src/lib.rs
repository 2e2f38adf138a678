//! `warmup-plan`: the one planning step of scripts/warmup and scripts/warmup-slurm. It parses
//! the driver's options (`flags`, clap: a typo is a usage error, exit 2), discovers once what the
//! run is made of (`discover`), and returns one typed decision with its reason (`decision`):
//! COMMAND plain, replaying the record, one process recording, or a sweep with its plan. The
//! drivers `eval` what it prints (`--format sh`) and only compose the steps it names
//! (docs/CONTRACT.md, "warmup-plan").
//!
//! Its own options come first: `warmup-plan [--format sh|json] [--for warmup|warmup-slurm]
//! DRIVER-OPTIONS... [-- COMMAND...]`, and `--completions SHELL --for DRIVER` or
//! `--man --for DRIVER` print the driver's completion script or man page, generated from the
//! same clap definitions.

mod cache;
pub mod decision;
pub mod discover;
pub mod flags;
mod output;
mod slurm;

use anyhow::{bail, Context, Result};
use clap::Parser;
use discover::World;
use output::{Format, Output};
use std::ffi::OsString;
use std::process::ExitCode;

pub const TOOL: &str = "warmup-plan";

/// Which driver's options follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driver {
    Warmup,
    Slurm,
}

impl Driver {
    fn name(self) -> &'static str {
        match self {
            Driver::Warmup => "warmup",
            Driver::Slurm => "warmup-slurm",
        }
    }

    fn command(self) -> clap::Command {
        use clap::CommandFactory;
        match self {
            Driver::Warmup => flags::Warmup::command(),
            Driver::Slurm => flags::Slurm::command(),
        }
    }
}

const ABOUT: &str = "Decide how warmup or warmup-slurm runs COMMAND: plain, replaying the \
record, one process recording, or a sweep with its plan";

const AFTER: &str = "The driver's options follow warmup-plan's own, unchanged; `--help` after `--for DRIVER`
is the driver's help. Output (docs/CONTRACT.md, \"warmup-plan\"): decision=plain|replay|record|sweep,
reason='...', `export NAME=VALUE` lines for replay and record, and for a sweep the devices, the
record folder, the op and warmup-shard's and warmup-spawn's argv as arrays.

EXAMPLES:
  eval \"$(warmup-plan --format sh --for warmup \"$@\")\"      # what warmup does
  warmup-plan --format json --gpus 2 -- pytest bench.py --shape_file s.yaml
  warmup-plan --completions bash --for warmup > warmup.bash
  warmup-plan --man --for warmup-slurm > warmup-slurm.1

EXIT STATUS:
  0      decided: the decision is on stdout
  2      usage error (the driver's options, a record folder or scratch that is no folder): nothing
         was decided or made; the message names the option and what to do
  127    warmup's COMMAND cannot be run (not found in PATH, not executable, or an option where
         the program belongs): nothing was decided or made";

/// warmup-plan's own command line, for its `--help`, man page and completions.
fn own_command() -> clap::Command {
    use clap::{Arg, ArgAction};
    clap::Command::new(TOOL)
        .version(env!("CARGO_PKG_VERSION"))
        .about(ABOUT)
        .after_long_help(AFTER)
        .arg(
            Arg::new("format")
                .long("format")
                .value_name("FORMAT")
                .value_parser(["sh", "json"])
                .help("sh: assignments a driver evals (default); json: one object"),
        )
        .arg(
            Arg::new("for")
                .long("for")
                .value_name("DRIVER")
                .value_parser(["warmup", "warmup-slurm"])
                .help("Whose options follow [default: warmup]"),
        )
        .arg(
            Arg::new("completions")
                .long("completions")
                .value_name("SHELL")
                .value_parser(["bash", "zsh", "fish"])
                .help("Print the driver's completion script"),
        )
        .arg(
            Arg::new("man")
                .long("man")
                .action(ArgAction::SetTrue)
                .help("Print the driver's man page"),
        )
        .arg(
            Arg::new("options")
                .value_name("DRIVER-OPTIONS")
                .num_args(0..)
                .trailing_var_arg(true)
                .allow_hyphen_values(true)
                .help("The driver's options, then -- COMMAND..."),
        )
}

/// warmup-plan's own options, read from the front of its argv.
#[derive(Debug)]
struct Own {
    format: Format,
    driver: Driver,
    /// `--for` was given: `--help` is the driver's.
    driven: bool,
    generate: Option<String>,
    rest: Vec<OsString>,
}

fn own(argv: Vec<OsString>) -> Result<Own> {
    let mut it = argv.into_iter().peekable();
    let mut own = Own {
        format: Format::Sh,
        driver: Driver::Warmup,
        driven: false,
        generate: None,
        rest: Vec::new(),
    };
    let value = |it: &mut std::iter::Peekable<std::vec::IntoIter<OsString>>, flag: &str| {
        it.next()
            .and_then(|v| v.into_string().ok())
            .with_context(|| format!("{flag} needs a value"))
    };
    while let Some(arg) = it.peek().and_then(|a| a.to_str()).map(str::to_owned) {
        match arg.as_str() {
            "--format" => {
                it.next();
                own.format = match value(&mut it, "--format")?.as_str() {
                    "sh" => Format::Sh,
                    "json" => Format::Json,
                    other => bail!("--format {other:?}: give sh or json"),
                };
            }
            "--for" => {
                it.next();
                own.driven = true;
                own.driver = match value(&mut it, "--for")?.as_str() {
                    "warmup" => Driver::Warmup,
                    "warmup-slurm" => Driver::Slurm,
                    other => bail!("--for {other:?}: give warmup or warmup-slurm"),
                };
            }
            "--completions" => {
                it.next();
                own.generate = Some(value(&mut it, "--completions")?);
            }
            "--man" => {
                it.next();
                own.generate = Some("man".into());
            }
            "--help" | "-h" if !own.driven => {
                own_command().print_long_help()?;
                std::process::exit(0);
            }
            "--version" | "-V" if !own.driven => {
                print!("{}", own_command().render_version());
                std::process::exit(0);
            }
            kind if kind.starts_with("--generate=") && !own.driven => {
                let mut out = std::io::stdout().lock();
                let code = match toolkit::cli::generate(
                    own_command(),
                    &kind["--generate=".len()..],
                    &mut out,
                ) {
                    Ok(()) => 0,
                    Err(err) => {
                        eprintln!("{err:#}");
                        2
                    }
                };
                std::process::exit(code);
            }
            _ => break,
        }
    }
    own.rest = it.collect();
    Ok(own)
}

/// The tool's whole run: the exit status, with every message on stderr.
pub fn main() -> ExitCode {
    let own = match own(std::env::args_os().skip(1).collect()) {
        Ok(own) => own,
        Err(err) => {
            eprintln!("{TOOL}: {err:#}");
            return ExitCode::from(toolkit::USAGE);
        }
    };
    if let Some(kind) = &own.generate {
        let mut out = std::io::stdout().lock();
        let generated = if kind == "man" {
            toolkit::cli::man(own.driver.command(), &mut out)
        } else {
            toolkit::cli::generate(own.driver.command(), kind, &mut out)
        };
        return match generated {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("{TOOL}: {err:#}");
                ExitCode::from(toolkit::USAGE)
            }
        };
    }
    // Run for a driver (`--for`, as the scripts run it), a message is the driver's, whose
    // command line the user typed; run directly, it is warmup-plan's own.
    let prog = if own.driven { own.driver.name() } else { TOOL };
    let argv = std::iter::once(OsString::from(own.driver.name())).chain(own.rest.clone());
    let world = World::current();
    let result = match own.driver {
        Driver::Warmup => flags::Warmup::try_parse_from(argv)
            .map_err(|e| usage(prog, e))
            .and_then(|args| {
                runnable(prog, &args.command, &world)?;
                plan(&args, &world).map_err(|e| refused(prog, e))
            }),
        Driver::Slurm => flags::Slurm::try_parse_from(argv)
            .map_err(|e| usage(prog, e))
            .and_then(|args| slurm::plan(&args, &world).map_err(|e| refused(prog, e))),
    };
    let out = match result {
        Ok(out) => out,
        Err(Refusal::Text(text)) => Output::help(text),
        Err(Refusal::Usage) => return ExitCode::from(toolkit::USAGE),
        Err(Refusal::NotFound) => return ExitCode::from(toolkit::COMMAND_NOT_FOUND),
    };
    match out.write(own.format) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => toolkit::exit(TOOL, Err(err)),
    }
}

enum Refusal {
    /// `--help`: the text, for the driver to print on stdout.
    Text(String),
    /// Said on stderr; exit 2.
    Usage,
    /// COMMAND cannot be run: said on stderr; exit 127, what the shell would have given.
    NotFound,
}

/// scripts/warmup's COMMAND must be runnable before anything is decided, made or run: the check
/// warmup-spawn makes before its children start (`protocol::command::check_program`).
fn runnable(prog: &str, command: &[OsString], world: &World) -> Result<(), Refusal> {
    let Some(program) = command.first() else {
        return Ok(()); // clap requires COMMAND
    };
    protocol::command::check_program(program, world.lookup.path.as_deref()).map_err(|err| {
        eprintln!("{prog}: {err:#}");
        Refusal::NotFound
    })
}

fn usage(prog: &str, err: clap::Error) -> Refusal {
    use clap::error::{ContextKind, ErrorKind};
    if !err.use_stderr() {
        return Refusal::Text(err.render().to_string());
    }
    if err.kind() == ErrorKind::UnknownArgument {
        let arg = err
            .get(ContextKind::InvalidArg)
            .map(ToString::to_string)
            .unwrap_or_default();
        eprintln!("{prog}: unknown option '{arg}' (COMMAND goes after --)");
    } else {
        // clap's own tip ("For more information, try '--help'.") goes: the line below is the
        // one hint, naming the command.
        let text = err.render().to_string();
        let kept: Vec<&str> = text
            .lines()
            .filter(|line| !line.starts_with("For more information, try"))
            .collect();
        eprintln!("{prog}: {}", kept.join("\n").trim_end());
    }
    eprintln!("{prog}: run '{prog} --help' for usage");
    Refusal::Usage
}

fn refused(prog: &str, err: anyhow::Error) -> Refusal {
    eprintln!("{prog}: {err:#}");
    eprintln!("{prog}: run '{prog} --help' for usage");
    Refusal::Usage
}

/// scripts/warmup's plan: the decision, acted on (`cache::apply`), and what the steps it names
/// need.
pub fn plan(args: &flags::Warmup, world: &World) -> Result<Output> {
    let found = discover::discover(args, world)?;
    let decision = decision::decide(&found.facts);
    let (found, decision) = cache::apply(found, decision);
    Ok(output::warmup(args, &found, &decision))
}
