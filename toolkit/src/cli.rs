//! Command-line plumbing every tool shares: parsing (usage errors named by the tool, exit 2),
//! numbers given on the command line, and the shell completions and man pages that
//! `make install` generates from the same clap definitions the tools parse with.

use clap::Parser;
use std::io::Write;

/// The hidden first argument that prints a generated asset instead of running the tool:
/// `--generate=bash|zsh|fish|man`. `make install` calls it; it is not part of the contract.
const GENERATE: &str = "--generate=";

/// A tool's `after_long_help`: its examples (an `EXAMPLES:` section), then its own EXIT STATUS
/// section (`exit`, as [`crate::exit_status_help`] writes it). The man page takes each
/// `HEADING:` section of it as a section of its own, its lines kept as written.
pub fn after_help(examples: &str, exit: &str) -> String {
    format!("{examples}\n\n{CHECK_ARGS_HELP}\n\n{exit}")
}

/// Where the man pages say the contract is: `make install` installs docs/CONTRACT.md into
/// PREFIX/share/doc/parallel-warmup and sets this, when it generates them, to that folder.
pub const DOC_DIR: &str = "WARMUP_DOC_DIR";

/// Every tool and script a page names in SEE ALSO.
const FAMILY: [&str; 7] = [
    "warmup",
    "warmup-slurm",
    "warmup-shard",
    "warmup-spawn",
    "warmup-merge",
    "warmup-publish",
    "warmup-costs",
];

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
        "man" => return man(cmd, out),
        "bash" => Shell::Bash,
        "zsh" => Shell::Zsh,
        "fish" => Shell::Fish,
        other => anyhow::bail!("{name}: cannot generate {other:?}: use bash, zsh, fish or man"),
    };
    clap_complete::generate(shell, &mut cmd, name, out);
    Ok(())
}

/// The man page: clap_mangen's sections, then each `HEADING:` section of the long help (the
/// examples, the exit statuses) as a section of its own, lines kept as written (`.nf`: no
/// reflowing), and SEE ALSO naming the other tools and the installed contract.
fn man(cmd: clap::Command, out: &mut dyn Write) -> anyhow::Result<()> {
    let name = cmd.get_name().to_owned();
    let extra = cmd
        .get_after_long_help()
        .map(|h| h.to_string())
        .unwrap_or_default();
    clap_mangen::Man::new(
        cmd.after_long_help(clap::builder::Resettable::<clap::builder::StyledStr>::Reset),
    )
    .render(out)?;
    for (heading, body) in sections(&extra) {
        writeln!(out, ".SH \"{}\"\n.nf", roff(&heading))?;
        for line in body.trim_matches('\n').lines() {
            writeln!(out, "{}", roff_line(line))?;
        }
        writeln!(out, ".fi")?;
    }
    let others: Vec<String> = FAMILY
        .iter()
        .filter(|t| **t != name)
        .map(|t| format!("\\fB{}\\fR(1)", roff(t)))
        .collect();
    let contract = match std::env::var_os(DOC_DIR) {
        Some(dir) => format!("{}/CONTRACT.md", std::path::Path::new(&dir).display()),
        None => "share/doc/parallel\\-warmup/CONTRACT.md under the installation prefix".to_owned(),
    };
    writeln!(
        out,
        ".SH \"SEE ALSO\"\n{}\n.PP\nThe contract the tools keep (files, formats, exit statuses): {}",
        others.join(", "),
        if std::env::var_os(DOC_DIR).is_some() {
            roff(&contract)
        } else {
            contract
        }
    )?;
    Ok(())
}

/// The `HEADING:` sections of a long help, in order, with the lines under each.
fn sections(text: &str) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        let heading = line
            .strip_suffix(':')
            .filter(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_uppercase() || c == ' '));
        match (heading, found.last_mut()) {
            (Some(h), _) => found.push((h.to_owned(), String::new())),
            (None, Some((_, body))) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    found
}

/// Text escaped for roff: backslashes and dashes.
fn roff(text: &str) -> String {
    text.replace('\\', "\\e").replace('-', "\\-")
}

/// A line of a no-fill block: escaped, and never read as a request (`.` or `'` first).
fn roff_line(line: &str) -> String {
    let text = roff(line);
    if text.starts_with(['.', '\'']) {
        format!("\\&{text}")
    } else {
        text
    }
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
    fn the_man_page_keeps_examples_and_exit_statuses_as_sections_of_their_own_unreflowed() {
        let cmd = clap::Command::new("warmup-x")
            .version("1.0")
            .after_long_help(after_help(
                "EXAMPLES:\n  warmup-x --op mm a.json\n      what it does\n\nDIR is where.",
                "EXIT STATUS:\n  0  done\n  3  nothing to do",
            ));
        let mut out = Vec::new();
        generate(cmd, "man", &mut out).expect("man");
        let page = String::from_utf8(out).expect("utf-8");
        assert!(!page.contains(".SH EXTRA"), "{page}");
        assert!(
            page.contains(".SH \"EXAMPLES\"\n.nf\n  warmup\\-x \\-\\-op mm a.json\n      what it does\n\nDIR is where.\n.fi\n"),
            "{page}"
        );
        assert!(
            page.contains(".SH \"EXIT STATUS\"\n.nf\n  0  done\n  3  nothing to do\n.fi\n"),
            "{page}"
        );
        assert!(page.contains(".SH \"SEE ALSO\""), "{page}");
        assert!(page.contains("CONTRACT.md"), "{page}");
        assert!(!page.contains("docs/CONTRACT.md"), "{page}");
    }

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
