//! One started child, from its start until nothing of it is left: what has been sent to it
//! ([`Phase`]), why it is being stopped ([`Stop`]), and how its leader ended. Its device is free
//! again only when [`Child::gone`]: the leader reaped, its process group empty, and no process
//! carrying its shard's marker left (one that called `setsid` included).

use crate::sweep::log::Log;
use crate::sweep::process::{self, Exit};
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use protocol::status::ShardStatus;
use std::time::{Duration, Instant};

/// What has been sent to a child's processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Nothing: it runs, or its leader exited and nothing of it is left.
    Running,
    /// SIGTERM; SIGKILL follows at `kill_at`.
    Stopping { kill_at: Instant },
    /// SIGKILL: the kernel is taking them down.
    Killed,
}

/// Why a child is being stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// It ran past `--timeout`.
    TimedOut,
    /// warmup-spawn was told to stop.
    Interrupted,
    /// Its leader exited and left processes behind; they may hold the device.
    Leftovers,
}

impl Stop {
    /// What a person watching is told.
    pub fn words(self) -> &'static str {
        match self {
            Stop::TimedOut => "timed out",
            Stop::Interrupted => "interrupted",
            Stop::Leftovers => "exited, leaving processes behind",
        }
    }
}

/// A child that started and of which something may be left.
#[derive(Debug)]
pub struct Child {
    /// Its index in the run's jobs.
    pub job: usize,
    /// Its place in the device pool.
    pub slot: usize,
    /// The leader's pid, which is also its process group id.
    pub pid: Pid,
    pub log: Log,
    /// Filled in as it ends.
    status: ShardStatus,
    started: Instant,
    deadline: Option<Instant>,
    phase: Phase,
    stop: Option<Stop>,
    /// How the leader ended, and when.
    exit: Option<(Exit, Instant)>,
}

impl Child {
    pub fn new(
        job: usize,
        slot: usize,
        pid: Pid,
        log: Log,
        mut status: ShardStatus,
        started: Instant,
        timeout: Option<Duration>,
    ) -> Child {
        status.pid = Some(pid.as_raw().unsigned_abs());
        Child {
            job,
            slot,
            pid,
            log,
            status,
            started,
            deadline: timeout.map(|t| started + t),
            phase: Phase::Running,
            stop: None,
            exit: None,
        }
    }

    /// Its leader was reaped.
    pub fn exited(&mut self, exit: Exit) {
        self.exit.get_or_insert((exit, Instant::now()));
    }

    /// Starts stopping it for `why`: SIGTERM to its group and to those of `marked` (the
    /// processes carrying its marker) that left the group, SIGKILL after `grace` unless that is
    /// due sooner already. Returns whether this began its stop (false when it was being stopped
    /// already).
    pub fn stop(&mut self, why: Stop, now: Instant, grace: Duration, marked: &[Pid]) -> bool {
        // A timeout stays the reason; a stop signal is a better one than leftovers.
        if self.stop.is_none() || (why == Stop::Interrupted && self.stop == Some(Stop::Leftovers)) {
            self.stop = Some(why);
        }
        match self.phase {
            Phase::Running => {
                self.signal(Signal::SIGTERM, marked);
                self.phase = Phase::Stopping {
                    kill_at: now + grace,
                };
                true
            }
            Phase::Stopping { kill_at } => {
                self.phase = Phase::Stopping {
                    kill_at: kill_at.min(now + grace),
                };
                false
            }
            Phase::Killed => false,
        }
    }

    /// What is due at `now`: the timeout (returns `Stop::TimedOut` when it begins a stop), the
    /// leftovers of an exited leader (`Stop::Leftovers`), or SIGKILL after the grace.
    pub fn tick(&mut self, now: Instant, grace: Duration, marked: &[Pid]) -> Option<Stop> {
        let mut began = None;
        if self.phase == Phase::Running {
            let why = match self.exit {
                None if self.deadline.is_some_and(|d| d <= now) => Some(Stop::TimedOut),
                Some(_) if process::group_alive(self.pid) || !marked.is_empty() => {
                    Some(Stop::Leftovers)
                }
                _ => None,
            };
            if let Some(why) = why {
                self.stop(why, now, grace, marked);
                began = Some(why);
            }
        }
        if let Phase::Stopping { kill_at } = self.phase {
            if kill_at <= now {
                self.signal(Signal::SIGKILL, marked);
                self.phase = Phase::Killed;
            }
        } else if self.phase == Phase::Killed {
            // What left the group after the SIGKILL went out (a setsid racing it).
            process::signal_each(marked, Signal::SIGKILL, Some(self.pid));
        }
        began
    }

    /// `sig` once to every process of it: its group, and those that left the group.
    fn signal(&self, sig: Signal, marked: &[Pid]) {
        process::signal_group(self.pid, sig);
        process::signal_each(marked, sig, Some(self.pid));
    }

    /// Nothing of it is left: the leader reaped, the group empty, no marked process.
    pub fn gone(&self, marked: &[Pid]) -> bool {
        self.exit.is_some() && marked.is_empty() && !process::group_alive(self.pid)
    }

    /// Whether something of it must be looked for by polling rather than waited for.
    pub fn lingers(&self) -> bool {
        self.exit.is_some() || self.phase != Phase::Running
    }

    /// The next moment it needs attention, if any.
    pub fn next_event(&self) -> Option<Instant> {
        match self.phase {
            Phase::Running if self.exit.is_none() => self.deadline,
            Phase::Stopping { kill_at } => Some(kill_at),
            _ => None,
        }
    }

    /// Its status, now that nothing of it is left.
    pub fn finish(mut self) -> (usize, usize, ShardStatus) {
        self.log.close();
        let (exit, ended) = self.exit.unwrap_or((Exit::Code(-1), Instant::now()));
        let status = &mut self.status;
        match exit {
            Exit::Code(c) => status.exit_code = Some(c),
            Exit::Signal(s) => {
                status.signal = Some(s as i32);
                status.signal_name = Some(s.as_str().to_owned());
            }
        }
        status.timed_out = self.stop == Some(Stop::TimedOut);
        status.interrupted = self.stop == Some(Stop::Interrupted);
        status.seconds = (ended - self.started).as_secs_f64();
        (self.job, self.slot, self.status)
    }
}
