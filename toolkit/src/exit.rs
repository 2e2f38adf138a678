//! Exit statuses, the same in every tool (docs/CONTRACT.md, "Exit statuses"), and the one place that
//! turns a tool's result into a process exit status and a message on stderr.

use std::process::ExitCode;

/// How a tool's run ended when it did not fail on bad usage or bad input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// 0: done.
    Done,
    /// 1: the work ran and part of it failed (a shard exited non-zero or timed out).
    Partial,
    /// 3: nothing to do: fewer than 2 shards would result, no configs were recovered.
    NothingToDo,
    /// 128+N: stopped by signal N, after every child was stopped and reaped.
    Signalled(i32),
    /// The status of the command the tool ran for its caller and waited for
    /// (`warmup-spawn --measure`: the measurement's), passed on as it is.
    Passed(u8),
}

/// 2: usage or input error; every `Err` a tool returns maps to it.
pub const USAGE: u8 = 2;

/// 127: the command a tool was to run cannot be found or run, as a shell says of it.
pub const COMMAND_NOT_FOUND: u8 = 127;

impl Status {
    /// The process exit status this outcome stands for.
    pub fn code(self) -> u8 {
        match self {
            Status::Done => 0,
            Status::Partial => 1,
            Status::NothingToDo => 3,
            Status::Signalled(n) => u8::try_from(128 + n).unwrap_or(u8::MAX),
            Status::Passed(code) => code,
        }
    }
}

/// Turns `run`'s result into the exit status, printing an error as `TOOL: message: cause: ...`.
///
/// An error that comes from writing to a closed stdout (`tool | head`) is no failure of the tool:
/// it exits 0 quietly, like coreutils.
pub fn exit(tool: &str, result: anyhow::Result<Status>) -> ExitCode {
    match result {
        Ok(status) => ExitCode::from(status.code()),
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{tool}: {err:#}");
            ExitCode::from(USAGE)
        }
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The line every tool's EXIT STATUS section has for 2.
pub const USAGE_ROW: (&str, &str) = (
    "2",
    "usage or input error: nothing was written; the message names the file and what is wrong",
);

/// A tool's `--help` EXIT STATUS section: its own statuses and what each means for it, each
/// meaning wrapped at 96 columns under itself.
pub fn exit_status_help(rows: &[(&str, &str)]) -> String {
    const WIDTH: usize = 96;
    const INDENT: usize = 9;
    let mut text = String::from("EXIT STATUS:");
    for (code, meaning) in rows {
        let mut line = format!("  {code:<6}");
        for word in meaning.split_whitespace() {
            if line.len() + 1 + word.len() > WIDTH && line.len() > INDENT {
                text.push('\n');
                text.push_str(&line);
                line = " ".repeat(INDENT - 1);
            }
            line.push(' ');
            line.push_str(word);
        }
        text.push('\n');
        text.push_str(&line);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_the_contract() {
        assert_eq!(Status::Done.code(), 0);
        assert_eq!(Status::Partial.code(), 1);
        assert_eq!(Status::NothingToDo.code(), 3);
        assert_eq!(Status::Signalled(2).code(), 130);
        assert_eq!(Status::Signalled(15).code(), 143);
        assert_eq!(Status::Passed(4).code(), 4);
    }

    #[test]
    fn exit_statuses_are_a_tools_own_wrapped_under_their_meaning() {
        let long = "word ".repeat(30);
        let text = exit_status_help(&[("0", "done"), USAGE_ROW, ("3", &long)]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "EXIT STATUS:");
        assert_eq!(lines[1], "  0      done");
        assert!(lines[2].starts_with("  2      usage or input error"));
        assert!(lines.iter().all(|l| l.len() <= 96), "{text}");
        assert!(lines[4].starts_with("         word"), "{text}");
    }

    #[test]
    fn broken_pipe_anywhere_in_the_chain_is_quiet() {
        let io = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        let err = anyhow::Error::new(io).context("writing to stdout");
        assert!(is_broken_pipe(&err));
        assert!(!is_broken_pipe(&anyhow::anyhow!("other")));
    }
}
