//! Why warmup-plan decided nothing: the lines it says on stderr and the exit status they stand
//! for (docs/CONTRACT.md, "warmup-plan"). Each names the program the user ran (`warmup:` when
//! warmup-plan runs for a driver) and ends a usage error with the one hint to its help.

/// A refusal: its message, whole lines, and what kind of refusal it is.
#[derive(Debug)]
pub struct Refusal {
    kind: Kind,
    message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A usage error: exit 2.
    Usage,
    /// COMMAND cannot be run: exit 127, what the shell would have given.
    NotFound,
}

impl Refusal {
    /// clap's usage error, said as `prog`'s, with one hint to its help (clap's own tip goes).
    pub fn usage(prog: &str, err: &clap::Error) -> Refusal {
        use clap::error::{ContextKind, ErrorKind};
        let said = if err.kind() == ErrorKind::UnknownArgument {
            let arg = err
                .get(ContextKind::InvalidArg)
                .map(ToString::to_string)
                .unwrap_or_default();
            format!("unknown option '{arg}' (COMMAND goes after --)")
        } else {
            let text = err.render().to_string();
            let kept: Vec<&str> = text
                .lines()
                .filter(|line| !line.starts_with("For more information, try"))
                .collect();
            kept.join("\n").trim_end().to_owned()
        };
        Refusal::usage_text(prog, &said)
    }

    /// A usage error built from the options' values (`what`), said as `prog`'s, with the hint.
    pub fn usage_text(prog: &str, what: &str) -> Refusal {
        Refusal {
            kind: Kind::Usage,
            message: format!("{prog}: {what}\n{prog}: run '{prog} --help' for usage\n"),
        }
    }

    /// A refusal that is no misuse (exit 2 all the same), said as `prog`'s, without the hint.
    pub fn said(prog: &str, what: &str) -> Refusal {
        Refusal {
            kind: Kind::Usage,
            message: format!("{prog}: {what}\n"),
        }
    }

    /// A usage error whose message is whole already (a generator's, which names its command).
    pub fn usage_said(message: String) -> Refusal {
        Refusal {
            kind: Kind::Usage,
            message: format!("{message}\n"),
        }
    }

    /// COMMAND cannot be run (`protocol::command::check_program`'s why).
    pub fn not_found(prog: &str, err: &anyhow::Error) -> Refusal {
        Refusal {
            kind: Kind::NotFound,
            message: format!("{prog}: {err:#}\n"),
        }
    }

    /// The lines said on stderr.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The exit status.
    pub fn status(&self) -> u8 {
        match self.kind {
            Kind::Usage => toolkit::USAGE,
            Kind::NotFound => toolkit::COMMAND_NOT_FOUND,
        }
    }
}

/// A refusal that is no usage error (Slurm missing, a scratch in use or not submitted to): said
/// without the usage hint.
#[derive(Debug)]
pub struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}
