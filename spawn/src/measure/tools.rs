//! The tools a `--measure` run calls once the sweep is over (warmup-merge, warmup-publish,
//! warmup-costs), as a caller would: found by `toolkit::tools::find` (the one lookup order);
//! each in a process group of its own that dies with warmup-spawn, under the run's scratch lock
//! (lent in `WARMUP_SCRATCH_LOCK_FD`), its stdout kept for warmup-spawn to read and its stderr the
//! caller's.

use crate::signal::ChildSetup;
use anyhow::{Context, Result};
use nix::sys::memfd::{memfd_create, MFdFlags};
use nix::unistd::Pid;
use std::ffi::OsStr;
use std::fs::File;
use std::io::{Read, Seek};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Command, Stdio};

pub use toolkit::tools::find;

/// A tool started: its pid (the leader of its group) and where its stdout goes.
#[derive(Debug)]
pub struct Started {
    pub pid: Pid,
    out: File,
}

impl Started {
    /// What it wrote to stdout, once it has ended.
    pub fn output(mut self) -> Vec<u8> {
        let mut text = Vec::new();
        let _ = self
            .out
            .rewind()
            .and_then(|()| self.out.read_to_end(&mut text));
        text
    }
}

/// Starts `program args...` with the scratch lock `lock` lent (a descriptor open on
/// `SCRATCH/.lock`, close-on-exec here), stdout into memory.
pub fn start(
    program: &Path,
    args: &[&OsStr],
    lock: Option<&File>,
    setup: ChildSetup,
) -> Result<Started> {
    let out = File::from(
        memfd_create(c"warmup-spawn-tool-stdout", MFdFlags::MFD_CLOEXEC)
            .context("making a buffer for a tool's output")?,
    );
    let mut cmd = Command::new(program);
    cmd.args(args).stdin(Stdio::null()).stdout(
        out.try_clone()
            .context("duplicating a tool's output buffer")?,
    );
    let lent = lock.map(|lock| (lock.as_raw_fd().to_string(), lock.as_raw_fd()));
    let pid = setup
        .start(&mut cmd, Some(protocol::lock::LOCK_FD), lent)
        .with_context(|| format!("running {}", program.display()))?;
    Ok(Started { pid, out })
}
