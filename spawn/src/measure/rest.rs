//! Everything after the sweep waits here: for a tool (warmup-merge, warmup-publish,
//! warmup-costs, run as `tools` says), or for the measurement, reading the stop signals meanwhile.

use super::measurement::Measurement;
use super::say::say;
use super::tools;
use crate::signal::{Shutdown, ShutdownRequest, Signals};
use crate::sweep::process::{self, Exit, POLL};
use anyhow::{Context, Result};
use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout};
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use std::ffi::OsStr;
use std::fs::File;
use std::time::{Duration, Instant};

/// Everything after the sweep waits here: for a tool, or for the measurement, reading the
/// stop signals meanwhile.
pub struct Rest<'a> {
    signals: &'a Signals,
    shutdown: &'a mut Shutdown,
    grace: Duration,
    pub measurement: Option<Measurement>,
}

impl<'a> Rest<'a> {
    pub fn new(
        signals: &'a Signals,
        shutdown: &'a mut Shutdown,
        grace: Duration,
        measurement: Option<Measurement>,
    ) -> Self {
        Rest {
            signals,
            shutdown,
            grace,
            measurement,
        }
    }

    pub fn signals(&self) -> &'a Signals {
        self.signals
    }

    /// Waits until `tool` ends (its exit) or, with none, until the measurement is gone. A stop
    /// lets a tool finish (they write atomically, and what they write is the resume's), a
    /// second one kills it; the measurement gets each as [`Measurement::stop`] says.
    pub fn wait(&mut self, tool: Option<Pid>) -> Result<Option<Exit>> {
        let mut tool_exit = None;
        loop {
            for (pid, exit) in process::reap().context("reaping children")? {
                if Some(pid) == tool {
                    tool_exit = Some(exit);
                } else if let Some(m) = self.measurement.as_mut().filter(|m| m.pid == pid) {
                    m.exited(exit);
                }
            }
            let done = match tool {
                Some(_) => tool_exit.is_some(),
                None => self.measurement.as_ref().is_none_or(Measurement::gone),
            };
            if done {
                return Ok(tool_exit);
            }
            self.block()?;
            let now = Instant::now();
            for sig in self.signals.read()? {
                let request = self.shutdown.request(sig);
                match request {
                    ShutdownRequest::Once(_) => say(&format!(
                        "got {sig}: stopping; SIGKILL after {:.1}s (send it again to skip the wait)",
                        self.grace.as_secs_f64()
                    )),
                    ShutdownRequest::Twice(_) => {
                        say(&format!("got {sig} again: killing everything now"));
                        if let Some(pid) = tool {
                            process::signal_group(pid, Signal::SIGKILL);
                        }
                    }
                }
                if let Some(m) = &mut self.measurement {
                    m.stop(request, now, self.grace);
                }
            }
            if let Some(m) = &mut self.measurement {
                m.tick(now);
            }
        }
    }

    /// Blocks until a signal (SIGCHLD included) or the measurement's next deadline.
    fn block(&self) -> Result<()> {
        let mut timeout = None;
        if let Some(m) = &self.measurement {
            timeout = m
                .next_event()
                .map(|at| at.saturating_duration_since(Instant::now()));
            if m.lingers() {
                timeout = Some(timeout.map_or(POLL, |t: Duration| t.min(POLL)));
            }
        }
        let timeout = match timeout {
            Some(d) => PollTimeout::try_from(
                i32::try_from(d.as_micros().div_ceil(1000)).unwrap_or(i32::MAX),
            )
            .unwrap_or(PollTimeout::MAX),
            None => PollTimeout::NONE,
        };
        let mut fds = [PollFd::new(self.signals.fd(), PollFlags::POLLIN)];
        match nix::poll::poll(&mut fds, timeout) {
            Ok(_) | Err(Errno::EINTR) => Ok(()),
            Err(e) => Err(e).context("waiting for the measurement"),
        }
    }

    /// Runs tool `name` with `args` to its end under the lent lock; its stdout when it exits 0,
    /// else its exit status (`Err`), a line saying why where it could not run at all.
    pub fn tool(&mut self, name: &str, args: &[&OsStr], lock: Option<&File>) -> ToolEnd {
        let started = tools::find(name)
            .and_then(|program| tools::start(&program, args, lock, self.signals.child_setup()));
        let started = match started {
            Ok(started) => started,
            Err(e) => {
                eprintln!("{}: {e:#}", crate::flags::TOOL);
                return ToolEnd::Failed(None);
            }
        };
        match self.wait(Some(started.pid)) {
            Ok(Some(Exit::Code(0))) => ToolEnd::Done(started.output()),
            Ok(Some(Exit::Code(code))) => ToolEnd::Failed(Some((code, started.output()))),
            Ok(_) => ToolEnd::Failed(None),
            Err(e) => {
                eprintln!("{}: {e:#}", crate::flags::TOOL);
                ToolEnd::Failed(None)
            }
        }
    }

    pub fn stopped(&self) -> Option<Signal> {
        self.shutdown.stopped_by()
    }
}

/// How a tool ended: its stdout, or its exit code and stdout (`None`: it did not run, or a
/// signal ended it).
pub enum ToolEnd {
    Done(Vec<u8>),
    Failed(Option<(i32, Vec<u8>)>),
}
