//! warmup-plan's own command line (clap): its options come first; what follows `--for DRIVER`,
//! or its last own option, is the driver's, handed whole to the driver's clap definition
//! (`flags`), so that `--help` after `--for DRIVER` is the driver's and a driver's user cannot
//! reach warmup-plan's own options.

use crate::flags::{Driver, TOOL};
use crate::output::{Format, Output};
use crate::refusal::Refusal;
use clap::ValueEnum;
use clap::{ArgAction, Parser};
use std::ffi::OsString;

const ABOUT: &str = "Decide how warmup or warmup-slurm runs COMMAND: plain, reusing the \
record, one process recording, or a sweep with its shard plan";

const AFTER: &str =
    "The driver's options follow warmup-plan's own, unchanged; `--help` after `--for DRIVER`
is the driver's help. Output (docs/CONTRACT.md, \"warmup-plan\"): decision=plain|reuse|record|sweep,
reason='...', `export NAME=VALUE` lines for reuse and record, and for a sweep the devices, the
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

/// warmup-plan's own options.
#[derive(Debug, Parser)]
#[command(
    name = TOOL,
    version,
    about = ABOUT,
    after_long_help = AFTER,
    disable_help_flag = true,
    args_override_self = true
)]
pub struct Own {
    /// sh: assignments a driver evals (default); json: one object
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = Format::Sh, hide_default_value = true)]
    pub format: Format,
    /// Print the driver's completion script
    #[arg(long, value_name = "SHELL", value_parser = ["bash", "zsh", "fish"])]
    pub completions: Option<String>,
    /// Print the driver's man page
    #[arg(long)]
    pub man: bool,
    /// Whose options follow [default: warmup]; DRIVER is warmup or warmup-slurm, and all that
    /// follows it is the driver's
    #[arg(
        long = "for",
        value_names = ["DRIVER", "DRIVER-OPTIONS"],
        num_args = 1..,
        allow_hyphen_values = true
    )]
    pub driven: Vec<OsString>,
    /// Print help
    #[arg(short = 'h', long, action = ArgAction::HelpLong)]
    help: Option<bool>,
    /// The driver's options, then -- COMMAND...
    #[arg(
        value_name = "DRIVER-OPTIONS",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub options: Vec<OsString>,
}

impl Own {
    /// The driver `--for` names; warmup without it.
    pub fn driver(&self) -> Result<Driver, Refusal> {
        let Some(name) = self.driven.first() else {
            return Ok(Driver::Warmup);
        };
        name.to_str()
            .and_then(|name| Driver::from_str(name, false).ok())
            .ok_or_else(|| {
                Refusal::usage_text(
                    TOOL,
                    &format!("--for {name:?}: give warmup or warmup-slurm"),
                )
            })
    }

    /// Whose name the messages carry: run for a driver (`--for`, as the scripts run it), a
    /// message is the driver's, whose command line the user typed; run directly, warmup-plan's.
    pub fn prog(&self) -> &'static str {
        match self.driver() {
            Ok(driver) if !self.driven.is_empty() => driver.name(),
            _ => TOOL,
        }
    }

    /// The driver's argv, its name first: what follows warmup-plan's own options in `argv`.
    /// clap collects it whole (`--for`'s values after DRIVER, else DRIVER-OPTIONS), but for a
    /// `--` right after the own options, which clap takes as its own end-of-options mark: the
    /// driver's COMMAND follows it, so it is handed on.
    pub fn driver_argv(&self, driver: Driver, argv: &[OsString]) -> Vec<OsString> {
        let rest = self.driven.len().saturating_sub(1) + self.options.len();
        let mut start = argv.len().saturating_sub(rest);
        if start > 0 && argv[start - 1] == "--" {
            start -= 1;
        }
        std::iter::once(OsString::from(driver.name()))
            .chain(argv[start..].iter().cloned())
            .collect()
    }
}

/// The driver's options as its clap definition parses them, or the help or version text it
/// answers instead.
#[derive(Debug)]
pub enum Parsed<A> {
    Args(A),
    /// `--help`, `--version`: the text, for the driver to print on stdout.
    Text(Output),
}

/// Parses `argv` (the driver's name first) by the driver's definition `A`; a usage error is
/// said as `prog`'s.
pub fn parse_driver<A: Parser>(prog: &str, argv: Vec<OsString>) -> Result<Parsed<A>, Refusal> {
    match A::try_parse_from(argv) {
        Ok(args) => Ok(Parsed::Args(args)),
        Err(err) if !err.use_stderr() => Ok(Parsed::Text(Output::help(err.render().to_string()))),
        Err(err) => Err(Refusal::usage(prog, &err)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    /// The driver and its argv, as warmup-plan hands them on.
    fn split(words: &[&str]) -> (Driver, Vec<OsString>) {
        let raw = argv(words);
        let own =
            Own::try_parse_from(std::iter::once(TOOL.into()).chain(raw.clone())).expect("parses");
        let driver = own.driver().expect("a driver");
        (driver, own.driver_argv(driver, &raw))
    }

    #[test]
    fn what_follows_the_own_options_goes_to_the_driver_whole() {
        assert_eq!(
            split(&["--format", "json", "--", "true"]),
            (Driver::Warmup, argv(&["warmup", "--", "true"]))
        );
        assert_eq!(
            split(&["--gpus", "2", "--format", "json", "--", "-x"]),
            (
                Driver::Warmup,
                argv(&["warmup", "--gpus", "2", "--format", "json", "--", "-x"])
            )
        );
        assert_eq!(
            split(&["--for", "warmup-slurm", "--help"]),
            (Driver::Slurm, argv(&["warmup-slurm", "--help"]))
        );
        assert_eq!(
            split(&["--format", "sh", "--for", "warmup", "--", "--", "x"]),
            (Driver::Warmup, argv(&["warmup", "--", "--", "x"]))
        );
        assert_eq!(
            split(&["--for=warmup", "--", "x"]),
            (Driver::Warmup, argv(&["warmup", "--", "x"]))
        );
        assert_eq!(
            split(&["--for", "warmup", "--for", "warmup-slurm"]),
            (Driver::Warmup, argv(&["warmup", "--for", "warmup-slurm"])),
            "after --for DRIVER, nothing is warmup-plan's"
        );
    }

    #[test]
    fn a_driver_no_one_knows_is_a_usage_error() {
        let own = Own::try_parse_from(["warmup-plan", "--for", "nobody"]).expect("parses");
        let Err(refusal) = own.driver() else {
            panic!("accepted");
        };
        assert!(
            refusal
                .message()
                .starts_with("warmup-plan: --for \"nobody\": give warmup or warmup-slurm\n"),
            "{}",
            refusal.message()
        );
        assert_eq!(refusal.status(), toolkit::USAGE);
    }
}
