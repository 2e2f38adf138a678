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
    format!("{examples}\n\n{exit}")
}

/// Where the man pages say the contract is: `make install` installs docs/CONTRACT.md into
/// PREFIX/share/doc/parallel-warmup and sets this, when it generates them, to that folder.
pub const DOC_DIR: &str = "WARMUP_DOC_DIR";

/// Every tool and script a page names in SEE ALSO.
const FAMILY: [&str; 9] = [
    "warmup",
    "warmup-slurm",
    "warmup-shard",
    "warmup-spawn",
    "warmup-merge",
    "warmup-publish",
    "warmup-costs",
    "warmup-plan",
    "warmup-cache",
];

/// Parses the tool's arguments, or prints a completion script or man page and exits 0. A usage
/// error is printed as `TOOL: error: ...`, like every other message of the tool, and exits 2.
pub fn parse<A: Parser>() -> A {
    if let Some(kind) = std::env::args_os()
        .nth(1)
        .and_then(|a| generate_kind(&a).map(str::to_owned))
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
        std::process::exit(i32::from(crate::USAGE));
    })
}

/// The asset a tool's first argument asks for, where it is the hidden `--generate=KIND`.
pub fn generate_kind(first: &std::ffi::OsStr) -> Option<&str> {
    first.to_str()?.strip_prefix(GENERATE)
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

/// The man page: clap_mangen's sections (VERSION among them, from the command's version), with
/// a SYNOPSIS that shows each option's value (`[--gpus N]`, where clap_mangen gives `[--gpus]`)
/// unless the command writes its own usage, then each `HEADING:` section of the long help (the
/// examples, the exit statuses) as a section of its own, lines kept as written (`.nf`: no
/// reflowing), and SEE ALSO naming the other tools and the installed contract.
pub fn man(mut cmd: clap::Command, out: &mut dyn Write) -> anyhow::Result<()> {
    cmd.build();
    let name = cmd.get_name().to_owned();
    let extra = cmd
        .get_after_long_help()
        .map(|h| h.to_string())
        .unwrap_or_default();
    if cmd.get_overridden_usage().is_none() {
        let usage = synopsis(&cmd);
        cmd = cmd.override_usage(usage);
    }
    let cmd = cmd.after_long_help(clap::builder::Resettable::<clap::builder::StyledStr>::Reset);
    let subcommands: Vec<(String, String)> = cmd
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set() && sub.get_name() != "help")
        .map(|sub| {
            let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
            (sub.get_name().to_owned(), about)
        })
        .collect();
    // clap_mangen's own SUBCOMMANDS section names a page per subcommand (`warmup-cache-list(1)`),
    // which is not installed: this one says where each one's options are instead.
    let page = clap_mangen::Man::new(cmd).title(name.to_uppercase());
    page.render_title(out)?;
    page.render_name_section(out)?;
    page.render_synopsis_section(out)?;
    page.render_description_section(out)?;
    page.render_options_section(out)?;
    if !subcommands.is_empty() {
        writeln!(out, ".SH SUBCOMMANDS")?;
        for (sub, about) in &subcommands {
            writeln!(
                out,
                ".TP
\\fB{}\\fR
{}",
                roff(sub),
                roff_line(about)
            )?;
        }
        writeln!(
            out,
            ".PP\nEach one's options: \\fB{} SUBCOMMAND \\-\\-help\\fR.",
            roff(&name)
        )?;
    }
    page.render_version_section(out)?;
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

/// One line of every option with its value and every operand, as the contract writes a command
/// line: `warmup [--gpus N] [--keep] [-h|--help] -- COMMAND...`; brackets round what may be left
/// out, `...` after what may be repeated.
fn synopsis(cmd: &clap::Command) -> String {
    let mut words = vec![cmd.get_name().to_owned()];
    let optional = |arg: &clap::Arg, item: String| {
        if arg.is_required_set() {
            item
        } else {
            format!("[{item}]")
        }
    };
    let value = |arg: &clap::Arg| {
        arg.get_value_names()
            .map(|names| names.join(" "))
            .unwrap_or_else(|| arg.get_id().as_str().to_uppercase())
    };
    let many = |arg: &clap::Arg| {
        matches!(arg.get_action(), clap::ArgAction::Append)
            || arg.get_num_args().is_some_and(|n| n.max_values() > 1)
    };
    for arg in cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !a.is_positional())
    {
        let flag = match (arg.get_short(), arg.get_long()) {
            (Some(short), Some(long)) => format!("-{short}|--{long}"),
            (Some(short), None) => format!("-{short}"),
            (None, Some(long)) => format!("--{long}"),
            (None, None) => continue,
        };
        let takes = arg.get_num_args().is_some_and(|n| n.takes_values());
        let mut item = if takes {
            format!("{flag} {}", value(arg))
        } else {
            flag
        };
        if many(arg) {
            item.push_str("...");
        }
        words.push(optional(arg, item));
    }
    for arg in cmd.get_positionals().filter(|a| !a.is_hide_set()) {
        let mut item = value(arg);
        if many(arg) {
            item.push_str("...");
        }
        if arg.is_last_set() {
            item = format!("-- {item}");
        }
        words.push(optional(arg, item));
    }
    words.join(" ")
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

/// A whole number as a person or a variable gives it: trimmed of spaces at both ends, then
/// decimal digits only (no sign), that fits a `u64`; the one rule every count is read by.
pub fn whole(text: &str) -> Option<u64> {
    let t = text.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse().ok()
}

/// A command-line count of 1 or more (`--shards`): clap's `value_parser`. Its refusal names the
/// bound a person can act on, not `u64::MAX` as clap's ranged parser does.
pub fn at_least_one(text: &str) -> Result<u64, String> {
    match whole(text) {
        Some(n) if n >= 1 => Ok(n),
        Some(_) => Err(format!("{text:?}: give at least 1")),
        None => Err(format!("{text:?}: give a whole number, at least 1")),
    }
}

/// A folder a tool makes when it is missing (`--scratch DIR`, `--record-dir DIR`), as clap's
/// `value_parser`: [`crate::file::check_folder`]'s rule, so that a path that is, or lies under,
/// anything but a folder is a usage error before anything runs.
pub fn folder() -> impl clap::builder::TypedValueParser<Value = std::path::PathBuf> {
    use clap::builder::TypedValueParser;
    clap::builder::PathBufValueParser::new().try_map(|path| {
        crate::file::check_folder(&path)
            .map(|()| path)
            .map_err(|why| format!("{why}; give a folder, or a path where one can be made"))
    })
}

/// The most seconds a timeout or a grace period may be: about 31 years, far past any run, and
/// far under what a clock can add without overflowing.
pub const MAX_SECONDS: f64 = 1e9;

/// A number of seconds above 0 and at most [`MAX_SECONDS`] (a timeout, a grace period): clap's
/// `value_parser`. Its refusal gives the range, never the conversion's own words.
pub fn seconds(text: &str) -> std::result::Result<std::time::Duration, String> {
    let range = || format!("{text:?}: give a number of seconds above 0, at most {MAX_SECONDS:e}");
    match text.trim().parse::<f64>() {
        Ok(n) if n > 0.0 && n <= MAX_SECONDS => Ok(std::time::Duration::from_secs_f64(n)),
        Ok(_) => Err(range()),
        Err(_) => Err(format!(
            "{text:?} is not a number of seconds (give one above 0, at most {MAX_SECONDS:e})"
        )),
    }
}

/// A command-line count of 0 or more (`--gpus`, `--gpus-per-task`): clap's `value_parser`,
/// with `allow_negative_numbers`, so that `-1` is refused as a value, not taken for an option.
pub fn whole_number(text: &str) -> Result<u64, String> {
    let t = text.trim();
    match t.parse::<u64>() {
        Ok(n) if t.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
        _ => Err(format!("{text:?}: give a whole number, 0 or more")),
    }
}

/// A size: bytes, or a number with K, M or G (powers of 1024), above 0 (`--max-log`): clap's
/// `value_parser`.
pub fn size(text: &str) -> std::result::Result<u64, String> {
    let t = text.trim();
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => t.split_at(i),
        None => (t, ""),
    };
    let shift = match unit.to_ascii_uppercase().trim_end_matches(['B', 'I']) {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        _ => {
            return Err(format!(
                "{text:?}: give bytes, or a size such as 512K, 200M or 2G"
            ))
        }
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?}: give bytes, or a size such as 512K, 200M or 2G"))?;
    if n == 0 {
        return Err(format!("{text:?}: give a size above 0"));
    }
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("{text:?}: too large"))
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
    fn a_whole_number_is_trimmed_digits_only() {
        assert_eq!(whole(" 12\n"), Some(12));
        for not in [
            "",
            " ",
            "+3",
            "-1",
            "1.0",
            "1 2",
            "0x1",
            "99999999999999999999",
        ] {
            assert_eq!(whole(not), None, "{not:?}");
        }
    }

    #[test]
    fn the_man_page_has_a_version_and_a_synopsis_with_every_options_value() {
        use clap::{Arg, ArgAction};
        let cmd = clap::Command::new("warmup-x")
            .version("1.2.3")
            .arg(Arg::new("gpus").long("gpus").value_name("N"))
            .arg(
                Arg::new("shards")
                    .long("shards")
                    .value_name("N")
                    .required(true),
            )
            .arg(
                Arg::new("arg")
                    .long("sbatch-arg")
                    .value_name("ARG")
                    .action(ArgAction::Append),
            )
            .arg(Arg::new("keep").long("keep").action(ArgAction::SetTrue))
            .arg(
                Arg::new("command")
                    .value_name("COMMAND")
                    .num_args(1..)
                    .last(true)
                    .required(true),
            );
        let mut out = Vec::new();
        man(cmd, &mut out).expect("man");
        let page = String::from_utf8(out).expect("utf-8");
        let synopsis = page
            .split(".SH SYNOPSIS\n")
            .nth(1)
            .and_then(|rest| rest.lines().next())
            .expect("a synopsis");
        assert_eq!(
            synopsis.replace("\\fB", "").replace("\\fR", ""),
            "warmup\\-x [\\-\\-gpus N] \\-\\-shards N [\\-\\-sbatch\\-arg ARG...] [\\-\\-keep] \
             [\\-h|\\-\\-help] [\\-V|\\-\\-version] \\-\\- COMMAND...",
            "{page}"
        );
        assert!(page.contains(".SH VERSION\nv1.2.3\n"), "{page}");
        assert!(
            page.contains(".TH WARMUP-X 1  \"warmup-x 1.2.3\""),
            "{page}"
        );
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
    fn seconds_are_above_0_and_at_most_the_bound_and_say_the_range() {
        assert_eq!(seconds(" 2.5 "), Ok(std::time::Duration::from_millis(2500)));
        assert_eq!(
            seconds("1e9"),
            Ok(std::time::Duration::from_secs(1_000_000_000))
        );
        for bad in ["0", "-1", "1e300", "1e10", "inf", "NaN"] {
            let why = seconds(bad).expect_err(bad);
            assert_eq!(
                why,
                format!("{bad:?}: give a number of seconds above 0, at most 1e9")
            );
        }
        let why = seconds("abc").expect_err("abc");
        assert!(
            why.contains("is not a number of seconds") && why.contains("1e9"),
            "{why}"
        );
    }

    #[test]
    fn whole_numbers_are_ascii_digits_only() {
        assert_eq!(whole_number(" 0 "), Ok(0));
        assert_eq!(whole_number("8"), Ok(8));
        for bad in ["-1", "+1", "1.5", "x", "", "99999999999999999999999"] {
            assert_eq!(
                whole_number(bad),
                Err(format!("{bad:?}: give a whole number, 0 or more"))
            );
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

    #[test]
    fn sizes_take_k_m_g_suffixes() {
        assert_eq!(size("100"), Ok(100));
        assert_eq!(size("512K"), Ok(512 << 10));
        assert_eq!(size("200m"), Ok(200 << 20));
        assert_eq!(size("2GiB"), Ok(2 << 30));
        for bad in ["", "0", "1T", "x", "-5", "1.5M"] {
            assert!(size(bad).is_err(), "{bad}");
        }
    }
}
