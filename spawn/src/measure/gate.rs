//! The measurement's gate (docs/CONTRACT.md, "The gate"): a pipe, not a path. warmup-spawn keeps
//! the write end (close-on-exec: no process it starts holds it) and the measurement inherits the
//! read end, named in `WARMUP_HARNESS_GATE=fd:N`. So only this run can open the gate, and when
//! warmup-spawn dies, SIGKILL included, the kernel closes the write end: a measurement of a
//! killed run reads end of file at its gate and runs no test, and no other run's gate is within
//! its reach.
//!
//! warmup-spawn keeps a read end too, never read while the measurement runs: once it has ended,
//! the line still being there means that it ran no test (it ended before reading it).
//!
//! What to write into it is `judgment`'s.

use anyhow::{Context, Result};
use nix::fcntl::OFlag;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, RawFd};

/// The line written into the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Word {
    /// The configs are published where the measurement was told: it replays them.
    Replay,
    /// Nothing was recovered, or merging or publishing failed: it tunes live, as the plain run.
    Live,
}

impl Word {
    pub fn line(self) -> &'static str {
        match self {
            Word::Replay => "replay",
            Word::Live => "live",
        }
    }
}

/// The gate's pipe, as warmup-spawn holds it.
#[derive(Debug)]
pub struct Gate {
    /// `None` once closed: the measurement reads end of file.
    write: Option<File>,
    /// The end the measurement inherits under this number, and warmup-spawn's look at the line.
    read: File,
}

impl Gate {
    pub fn new() -> Result<Gate> {
        let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC)
            .context("making the measurement's gate (a pipe)")?;
        Ok(Gate {
            write: Some(File::from(write)),
            read: File::from(read),
        })
    }

    /// The descriptor the measurement inherits, under the same number.
    pub fn child_fd(&self) -> RawFd {
        self.read.as_raw_fd()
    }

    /// `WARMUP_HARNESS_GATE`'s value.
    pub fn env_value(&self) -> String {
        format!("fd:{}", self.child_fd())
    }

    /// Writes the word's line; a gate already closed stays closed.
    pub fn tell(&mut self, word: Word) {
        if let Some(write) = &mut self.write {
            // Seven bytes into an empty pipe that warmup-spawn also reads: this never blocks.
            if write
                .write_all(format!("{}\n", word.line()).as_bytes())
                .is_err()
            {
                self.write = None;
            }
        }
    }

    /// Whether a line is still in the pipe: read without blocking, once the measurement ended.
    pub fn unread(&mut self) -> bool {
        let flags = nix::fcntl::fcntl(&self.read, nix::fcntl::FcntlArg::F_GETFL)
            .map(OFlag::from_bits_truncate);
        let nonblocking = flags.and_then(|f| {
            nix::fcntl::fcntl(
                &self.read,
                nix::fcntl::FcntlArg::F_SETFL(f | OFlag::O_NONBLOCK),
            )
        });
        if nonblocking.is_err() {
            return false;
        }
        let mut byte = [0u8; 1];
        matches!(self.read.read(&mut byte), Ok(1))
    }
}
