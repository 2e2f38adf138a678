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
    format!("{examples}\n\n{}", crate::EXIT_STATUS_HELP)
}

/// Parses the tool's arguments, or prints a completion script or man page and exits 0. A usage
/// error is printed as `TOOL: error: ...`, like every other message of the tool, and exits 2.
pub fn parse<A: Parser>() -> A {
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

/// A man page whose `after_long_help` sections (a line `NAME:` in capitals, then its indented
/// lines) become sections of their own, kept as written (`.nf`): EXIT STATUS, ENVIRONMENT,
/// EXAMPLES, rather than one reflowed EXTRA. For a command documented as a script (`warmup`).
pub fn man_with_sections(cmd: clap::Command, out: &mut dyn Write) -> anyhow::Result<()> {
    let title = cmd.get_name().to_uppercase();
    let extra = cmd.get_after_long_help().map(ToString::to_string);
    let man =
        clap_mangen::Man::new(cmd.after_long_help(clap::builder::Resettable::Reset)).title(title);
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    man.render_options_section(out)?;
    let roff_line = |line: &str| {
        let text = line.replace('\\', "\\e");
        if text.starts_with(['.', '\'']) {
            format!("\\&{text}")
        } else {
            text
        }
    };
    let mut open = false;
    for line in extra.as_deref().unwrap_or("").lines() {
        let head = line
            .strip_suffix(':')
            .filter(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_uppercase() || c == ' '));
        if let Some(head) = head {
            if open {
                writeln!(out, ".fi")?;
            }
            writeln!(out, ".SH {head}\n.nf")?;
            open = true;
        } else if open {
            writeln!(out, "{}", roff_line(line))?;
        }
    }
    if open {
        writeln!(out, ".fi")?;
    }
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

/// A positive, finite number of seconds (a timeout, a grace period): clap's `value_parser`.
pub fn seconds(text: &str) -> std::result::Result<std::time::Duration, String> {
    let n: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !(n.is_finite() && n > 0.0) {
        return Err(format!("{text:?}: give a positive number of seconds"));
    }
    std::time::Duration::try_from_secs_f64(n).map_err(|e| format!("{text:?}: {e}"))
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
