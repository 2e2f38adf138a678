//! Command-line plumbing every tool shares: parsing, and the shell completions and man pages
//! that `make install` generates from the same clap definitions the tools parse with.

use clap::Parser;
use std::io::Write;

/// The hidden first argument that prints a generated asset instead of running the tool:
/// `--generate=bash|zsh|fish|man`. `make install` calls it; it is not part of the contract.
const GENERATE: &str = "--generate=";

/// A tool's `after_long_help`: its examples, then the EXIT STATUS section every tool shares.
pub fn after_help(examples: &str) -> String {
    format!("{examples}\n\n{}", crate::exit::EXIT_STATUS_HELP)
}

/// Parses the tool's arguments, or prints a completion script or man page and exits 0.
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
    A::parse()
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
