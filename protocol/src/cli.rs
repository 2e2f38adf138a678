//! Command-line plumbing every tool shares: parsing (usage errors named by the tool, exit 2),
//! the `--op` argument, and the shell completions and man pages that `make install` generates
//! from the same clap definitions the tools parse with.

use crate::env::{CURRENT_OP, DEFAULT_OP};
use crate::plan::Plan;
use anyhow::{bail, Result};
use clap::Parser;
use std::io::Write;
use std::path::Path;

/// The hidden first argument that prints a generated asset instead of running the tool:
/// `--generate=bash|zsh|fish|man`. `make install` calls it; it is not part of the contract.
const GENERATE: &str = "--generate=";

/// A tool's `after_long_help`: its examples, then the EXIT STATUS section every tool shares.
pub fn after_help(examples: &str) -> String {
    format!(
        "{examples}\n\n{CHECK_ARGS_HELP}\n\n{}",
        crate::exit::EXIT_STATUS_HELP
    )
}

/// `--op OP`, one argument for every tool (`#[command(flatten)]`), so that each reads
/// [`CURRENT_OP`] and trims it by the same rule, and each `--help` says so alike.
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct OpArg {
    /// The op: its entry in the shape file, its record file <op>.json. Trimmed; blank means
    /// unset [default: the plan's op where a plan is read, else "default"]
    #[arg(long = "op", value_name = "OP", env = CURRENT_OP)]
    op: Option<String>,
}

impl OpArg {
    /// `--op` as if given as `op` (`None`: not given), for callers of a tool's `run`.
    pub fn new(op: Option<&str>) -> Self {
        OpArg {
            op: op.map(str::to_owned),
        }
    }

    /// The op given by `--op` or [`CURRENT_OP`], trimmed; `None` when unset or blank.
    pub fn given(&self) -> Option<&str> {
        self.op
            .as_deref()
            .map(str::trim)
            .filter(|op| !op.is_empty())
    }

    /// The op as the harness derives it: the one given, else [`DEFAULT_OP`].
    pub fn name(&self) -> &str {
        self.given().unwrap_or(DEFAULT_OP)
    }

    /// The plan's op, checked against the one given, if any: the records and shards of another
    /// op than the plan's would be the wrong ones.
    pub fn for_plan<'p>(&self, plan: &'p Plan, plan_path: &Path) -> Result<&'p str> {
        match self.given() {
            Some(op) if op != plan.op => bail!(
                "{}: the plan is for op {:?}, not {op:?}; drop --op (and {CURRENT_OP}) or give \
                 the matching op",
                plan_path.display(),
                plan.op
            ),
            _ => Ok(&plan.op),
        }
    }
}

/// The first argument that checks the rest instead of running the tool: `TOOL --check-args
/// ARGS...` exits 0 when TOOL would accept ARGS, else 2 with TOOL's own message. The scripts
/// check their pass-through options with it before anything runs.
pub const CHECK_ARGS: &str = "--check-args";

const CHECK_ARGS_HELP: &str = "CHECKING ARGUMENTS:
  --check-args ARGS...  as the first argument: check ARGS as this tool reads them (none is
                        required) and exit 0, or 2 with the message; runs and writes nothing";

/// Parses the tool's arguments, or prints a completion script or man page and exits 0. A usage
/// error is printed as `TOOL: error: ...`, like every other message of the tool, and exits 2.
pub fn parse<A: Parser>() -> A {
    parse_checked(|_| Ok(()))
}

/// [`parse`], where `TOOL --check-args ARGS...` also runs `check`: the checks the tool makes of
/// its arguments past its parser (a backend's name, a shard list against a plan).
pub fn parse_checked<A: Parser>(check: impl FnOnce(&clap::ArgMatches) -> Result<()>) -> A {
    if std::env::args_os().nth(1).is_some_and(|a| a == CHECK_ARGS) {
        std::process::exit(check_args(A::command(), check));
    }
    if let Some(kind) = std::env::args()
        .nth(1)
        .and_then(|a| a.strip_prefix(GENERATE).map(str::to_owned))
    {
        let code = match generate(A::command(), &kind, &mut std::io::stdout().lock()) {
            Ok(()) => 0,
            Err(err) => {
                eprintln!("{err:#}");
                2
            }
        };
        std::process::exit(code);
    }
    A::try_parse().unwrap_or_else(|err| {
        if !err.use_stderr() {
            // --help and --version: clap prints them to stdout and exits 0.
            err.exit();
        }
        let name = A::command().get_name().to_owned();
        eprint!("{name}: {}", err.render());
        std::process::exit(i32::from(crate::exit::USAGE));
    })
}

/// `--check-args`: the arguments after it parsed as the tool parses them, with none of them
/// required (a script checks its options before it knows the files), then `check`. Runs nothing.
fn check_args(cmd: clap::Command, check: impl FnOnce(&clap::ArgMatches) -> Result<()>) -> i32 {
    let name = cmd.get_name().to_owned();
    let ids: Vec<clap::Id> = cmd.get_arguments().map(|a| a.get_id().clone()).collect();
    let cmd = ids.into_iter().fold(cmd, |cmd, id| {
        cmd.mut_arg(id, |a| {
            a.required(false)
                .required_unless_present(clap::builder::Resettable::Reset)
        })
    });
    let argv = std::env::args_os()
        .enumerate()
        .filter_map(|(i, a)| (i != 1).then_some(a));
    let matches = match cmd.try_get_matches_from(argv) {
        Ok(matches) => matches,
        Err(err) => {
            eprint!("{name}: {}", err.render());
            return i32::from(crate::exit::USAGE);
        }
    };
    match check(&matches) {
        Ok(()) => 0,
        Err(err) => {
            eprintln!("{name}: {err:#}");
            i32::from(crate::exit::USAGE)
        }
    }
}

/// Writes the completion script for `kind` (`bash`, `zsh`, `fish`) or the man page (`man`).
pub fn generate(mut cmd: clap::Command, kind: &str, out: &mut dyn Write) -> anyhow::Result<()> {
    use clap_complete::Shell;
    let name = cmd.get_name().to_owned();
    let shell = match kind {
        "man" => return Ok(clap_mangen::Man::new(cmd).render(out)?),
        "bash" => Shell::Bash,
        "zsh" => Shell::Zsh,
        "fish" => Shell::Fish,
        other => anyhow::bail!("{name}: cannot generate {other:?}: use bash, zsh, fish or man"),
    };
    clap_complete::generate(shell, &mut cmd, name, out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blank_op_means_default() {
        assert_eq!(OpArg::new(None).name(), "default");
        assert_eq!(OpArg::new(Some("  \t")).name(), "default");
        assert_eq!(OpArg::new(Some("  \t")).given(), None);
        assert_eq!(OpArg::new(Some(" mm \n")).name(), "mm");
    }
}
