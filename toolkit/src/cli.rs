//! Command-line plumbing every tool shares: parsing (usage errors named by the tool, exit 2),
//! numbers given on the command line, and the shell completions and man pages that
//! `make install` generates from the same clap definitions the tools parse with.

use clap::Parser;
use std::io::Write;

/// The hidden first argument that prints a generated asset instead of running the tool:
/// `--generate=bash|zsh|fish|man`. `make install` calls it; it is not part of the contract.
const GENERATE: &str = "--generate=";

/// A tool's `after_long_help`: its examples, then the EXIT STATUS section every tool shares.
pub fn after_help(examples: &str) -> String {
    format!(
        "{examples}\n\n{CHECK_ARGS_HELP}\n\n{}",
        crate::EXIT_STATUS_HELP
    )
}

/// The first argument that checks the rest instead of running the tool: `TOOL --check-args
/// ARGS...` exits 0 when TOOL would accept ARGS, else 2 with TOOL's own message. The scripts
/// check their pass-through options with it before anything runs.
pub const CHECK_ARGS: &str = "--check-args";

const CHECK_ARGS_HELP: &str = "CHECKING ARGUMENTS:
  --check-args ARGS...  as the first argument: check ARGS as this tool reads them (none is
                        required) and exit 0, or 2 with the message; runs and writes nothing";

/// What a tool's command line asks of it: to run, or (`--check-args ARGS...`) to check ARGS.
#[derive(Debug)]
pub enum Invocation<A> {
    /// The arguments, parsed: run.
    Run(A),
    /// ARGS as the tool's parser read them, none required: the checks past the parser are the
    /// tool's to make (a backend's name, a shard list against a plan); it runs nothing.
    CheckArgs(clap::ArgMatches),
}

/// Parses the tool's arguments, or prints a completion script or man page and exits 0. A usage
/// error is printed as `TOOL: error: ...`, like every other message of the tool, and exits 2.
/// `TOOL --check-args ARGS...` exits 0 when the parser accepts ARGS (a tool with more checks to
/// make reads [`invocation`] instead).
pub fn parse<A: Parser>() -> A {
    match invocation() {
        Invocation::Run(args) => args,
        Invocation::CheckArgs(_) => std::process::exit(0),
    }
}

/// [`parse`], keeping `--check-args` for the tool: [`Invocation::CheckArgs`] once the parser
/// has accepted ARGS (a parser's refusal is printed and exits 2 here, as [`parse`]'s).
pub fn invocation<A: Parser>() -> Invocation<A> {
    if std::env::args_os().nth(1).is_some_and(|a| a == CHECK_ARGS) {
        return Invocation::CheckArgs(check_matches(A::command()));
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
    Invocation::Run(A::try_parse().unwrap_or_else(|err| {
        if !err.use_stderr() {
            // --help and --version: clap prints them to stdout and exits 0.
            err.exit();
        }
        let name = A::command().get_name().to_owned();
        eprint!("{name}: {}", err.render());
        std::process::exit(i32::from(crate::USAGE));
    }))
}

/// `--check-args`: the arguments after it parsed as the tool parses them, with none of them
/// required (a script checks its options before it knows the files); a refusal exits 2.
fn check_matches(cmd: clap::Command) -> clap::ArgMatches {
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
    cmd.try_get_matches_from(argv).unwrap_or_else(|err| {
        eprint!("{name}: {}", err.render());
        std::process::exit(i32::from(crate::USAGE));
    })
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

/// A command-line number that is finite and at least 0 (a start-up, an overhead): clap's
/// `value_parser`.
pub fn non_negative(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && n >= 0.0 => Ok(n),
        _ => Err(format!("{text:?}: give a number, 0 or more")),
    }
}

/// A command-line count of 1 or more (`--shards`): clap's `value_parser`. Its refusal names the
/// bound a person can act on, not `u64::MAX` as clap's ranged parser does.
pub fn at_least_one(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        Ok(_) => Err(format!("{text:?}: give at least 1")),
        Err(_) => Err(format!("{text:?}: give a whole number, at least 1")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_at_least_one_and_say_so() {
        assert_eq!(at_least_one("4"), Ok(4));
        assert_eq!(at_least_one("0"), Err("\"0\": give at least 1".to_owned()));
        for bad in ["-1", "x", "1.5", ""] {
            let why = at_least_one(bad).expect_err(bad);
            assert!(why.contains("at least 1"), "{why}");
            assert!(!why.contains("18446744073709551615"), "{why}");
        }
    }

    #[test]
    fn non_negative_numbers_only() {
        assert_eq!(non_negative(" 1.5 "), Ok(1.5));
        assert_eq!(non_negative("0"), Ok(0.0));
        for bad in ["-1", "inf", "NaN", "x", ""] {
            assert!(non_negative(bad).is_err(), "{bad}");
        }
    }
}
