//! The measurement (`--measure`): COMMAND run once more, unpinned, for the timings the caller
//! keeps, supervised as one more job of the run. Started with the sweep where it can wait at its
//! gate (`gate`), else after publishing; in a process group of its own, stopped by the same
//! once/twice rule as the sweep's children ([`ShutdownRequest`]).
//!
//! [`State`] is the decision, free of system calls, so that it is tested alone: what a stop, the
//! gate's opening and the clock do, as [`Action`]s; [`Measurement`] carries them out on the
//! process and the gate.

use crate::measure::gate::{Gate, Word};
use crate::signal::{ChildSetup, ShutdownRequest};
use crate::sweep::process::{self, Exit};
use anyhow::{Context, Result};
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use protocol::status::EnvChanges;
use std::ffi::OsString;
use std::process::Command;
use std::time::{Duration, Instant};

/// What the measurement's gate has been told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Told {
    /// Nothing yet: it waits there before its first test.
    Nothing,
    /// Its line: the session runs its tests.
    Word(Word),
    /// Closed without a word: the session ends without a test.
    Closed,
    /// It has no gate: started after the sweep, it runs its tests at once.
    NoGate,
}

/// What has been sent to its processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Running,
    /// Stopping: SIGKILL to its group at `kill_at` if it has not ended by then.
    Stopping {
        kill_at: Instant,
    },
    Killed,
}

/// What [`State`] asks to be done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Close the gate without a word.
    Close,
    /// Write the word into the gate.
    Tell(Word),
    /// Send a signal to its process group.
    Signal(Signal),
}

/// The measurement's supervision, as decisions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    told: Told,
    phase: Phase,
    exit: Option<Exit>,
    stopped: bool,
}

impl State {
    /// Started with the sweep, waiting at its gate; `gated` false: started after it, no gate.
    pub fn new(gated: bool) -> State {
        State {
            told: if gated { Told::Nothing } else { Told::NoGate },
            phase: Phase::Running,
            exit: None,
            stopped: false,
        }
    }

    /// A stop signal. Once: a measurement behind a shut gate has it closed (it ends without a
    /// test when it reaches it) and is killed after `grace` if it has not ended by then (a
    /// start-up still importing); one running its tests gets SIGTERM, SIGKILL after `grace`.
    /// Twice: SIGKILL now, the gate closed first if it was still shut.
    pub fn stop(&mut self, request: ShutdownRequest, now: Instant, grace: Duration) -> Vec<Action> {
        self.stopped = true;
        let mut actions = Vec::new();
        if self.told == Told::Nothing {
            self.told = Told::Closed;
            actions.push(Action::Close);
        }
        if self.exit.is_some() {
            return actions;
        }
        match (request, self.phase) {
            (_, Phase::Killed) => {}
            (ShutdownRequest::Twice(_), _) => {
                self.phase = Phase::Killed;
                actions.push(Action::Signal(Signal::SIGKILL));
            }
            (ShutdownRequest::Once(_), Phase::Running) => {
                self.phase = Phase::Stopping {
                    kill_at: now + grace,
                };
                if actions.is_empty() {
                    actions.push(Action::Signal(Signal::SIGTERM));
                }
            }
            (ShutdownRequest::Once(_), Phase::Stopping { .. }) => {}
        }
        actions
    }

    /// Opens the gate with `word`, when it is still shut, the process still runs and no stop
    /// came; otherwise nothing (see [`State::runs_again`]).
    pub fn open(&mut self, word: Word) -> Vec<Action> {
        if self.told != Told::Nothing || self.exit.is_some() || self.stopped {
            return Vec::new();
        }
        self.told = Told::Word(word);
        vec![Action::Tell(word)]
    }

    /// Closes the gate without a word, stopping nothing: the session ends without a test.
    pub fn close(&mut self) -> Vec<Action> {
        if self.told != Told::Nothing {
            return Vec::new();
        }
        self.told = Told::Closed;
        vec![Action::Close]
    }

    /// What is due at `now`: SIGKILL once a stop's grace is over.
    pub fn tick(&mut self, now: Instant) -> Vec<Action> {
        match self.phase {
            Phase::Stopping { kill_at } if kill_at <= now && self.exit.is_none() => {
                self.phase = Phase::Killed;
                vec![Action::Signal(Signal::SIGKILL)]
            }
            _ => Vec::new(),
        }
    }

    /// Its leader was reaped.
    pub fn exited(&mut self, exit: Exit) {
        self.exit.get_or_insert(exit);
    }

    /// When it next needs attention.
    pub fn next_event(&self) -> Option<Instant> {
        match self.phase {
            Phase::Stopping { kill_at } if self.exit.is_none() => Some(kill_at),
            _ => None,
        }
    }

    /// Whether COMMAND must run again, after the sweep, because this one ran no test: it ended
    /// before its gate opened, or with its line still unread (`unread`), and no stop came.
    pub fn runs_again(&self, unread: bool) -> bool {
        if self.stopped || self.exit.is_none() {
            return false;
        }
        match self.told {
            Told::Nothing => true,
            Told::Word(_) => unread,
            Told::Closed | Told::NoGate => false,
        }
    }

    /// The exit status it ended with, as a shell gives it (128+N for signal N).
    pub fn status(&self) -> Option<u8> {
        self.exit.map(|exit| match exit {
            Exit::Code(c) => u8::try_from(c).unwrap_or(u8::MAX),
            Exit::Signal(s) => u8::try_from(128 + s as i32).unwrap_or(u8::MAX),
        })
    }

    pub fn told(&self) -> Told {
        self.told
    }

    pub fn ended(&self) -> bool {
        self.exit.is_some()
    }

    /// Whether it was sent a stop: its processes are looked for until none is left.
    fn stopping(&self) -> bool {
        self.phase != Phase::Running
    }
}

/// How the measurement was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// With the sweep, behind its gate.
    Early,
    /// After publishing: COMMAND cannot wait at a gate.
    Late,
    /// After publishing, because the one started early ran no test.
    Again,
}

impl Start {
    pub fn word(self) -> &'static str {
        match self {
            Start::Early => "early",
            Start::Late => "late",
            Start::Again => "again",
        }
    }
}

/// The measurement's process and gate.
#[derive(Debug)]
pub struct Measurement {
    pub pid: Pid,
    pub start: Start,
    state: State,
    gate: Option<Gate>,
}

impl Measurement {
    /// Starts `argv` with `env`'s changes, with stdin, stdout and stderr the caller's, as the
    /// exec'd COMMAND had them; behind `gate` when given (`WARMUP_HARNESS_GATE` names its end).
    pub fn start(
        argv: &[OsString],
        env: &EnvChanges,
        gate: Option<Gate>,
        start: Start,
        setup: ChildSetup,
    ) -> Result<Measurement> {
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..]);
        env.apply(&mut cmd);
        let lent = gate
            .as_ref()
            .map(|gate| (gate.env_value(), gate.child_fd()));
        let pid = setup
            .outliving()
            .start(&mut cmd, Some(protocol::env::GATE), lent)
            .with_context(|| format!("running {}", argv[0].to_string_lossy()))?;
        Ok(Measurement {
            pid,
            start,
            state: State::new(gate.is_some()),
            gate,
        })
    }

    pub fn state(&self) -> &State {
        &self.state
    }

    pub fn stop(&mut self, request: ShutdownRequest, now: Instant, grace: Duration) {
        let actions = self.state.stop(request, now, grace);
        self.act(actions);
    }

    /// Opens the gate with `word`; false when it ran no test and ended before it could read it.
    pub fn open(&mut self, word: Word) -> bool {
        let actions = self.state.open(word);
        let opened = !actions.is_empty();
        self.act(actions);
        opened
    }

    pub fn close(&mut self) {
        let actions = self.state.close();
        self.act(actions);
    }

    pub fn tick(&mut self, now: Instant) {
        let actions = self.state.tick(now);
        self.act(actions);
    }

    pub fn exited(&mut self, exit: Exit) {
        self.state.exited(exit);
    }

    pub fn next_event(&self) -> Option<Instant> {
        self.state.next_event()
    }

    /// Whether its processes must be looked for by polling: it was stopped, and its leader may
    /// be gone while its group is not.
    pub fn lingers(&self) -> bool {
        self.state.stopping()
    }

    /// Nothing of it is left to wait for: its leader reaped, and once stopped, its group empty.
    pub fn gone(&self) -> bool {
        self.state.ended() && !(self.state.stopping() && process::group_alive(self.pid))
    }

    /// Whether its line is still in the gate, unread, now that it has ended.
    pub fn unread(&mut self) -> bool {
        self.gate.as_mut().is_some_and(Gate::unread)
    }

    fn act(&mut self, actions: Vec<Action>) {
        for action in actions {
            match action {
                Action::Close => self.gate = None,
                Action::Tell(word) => {
                    if let Some(gate) = &mut self.gate {
                        gate.tell(word);
                    }
                }
                Action::Signal(sig) => process::signal_group(self.pid, sig),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ShutdownRequest::{Once, Twice};

    const GRACE: Duration = Duration::from_secs(10);
    const INT: Signal = Signal::SIGINT;

    #[test]
    fn one_stop_behind_a_shut_gate_closes_it_and_kills_only_after_the_grace() {
        let now = Instant::now();
        let mut state = State::new(true);
        assert_eq!(state.stop(Once(INT), now, GRACE), [Action::Close]);
        assert_eq!(state.told(), Told::Closed);
        assert_eq!(state.tick(now + GRACE / 2), []);
        assert_eq!(state.next_event(), Some(now + GRACE));
        assert_eq!(state.tick(now + GRACE), [Action::Signal(Signal::SIGKILL)]);
        assert_eq!(state.tick(now + GRACE * 2), [], "killed once");
    }

    #[test]
    fn one_stop_behind_an_open_gate_is_sigterm_then_sigkill_after_the_grace() {
        let now = Instant::now();
        let mut state = State::new(true);
        assert_eq!(state.open(Word::Replay), [Action::Tell(Word::Replay)]);
        assert_eq!(
            state.stop(Once(Signal::SIGTERM), now, GRACE),
            [Action::Signal(Signal::SIGTERM)]
        );
        assert_eq!(state.tick(now + GRACE), [Action::Signal(Signal::SIGKILL)]);
    }

    #[test]
    fn a_second_stop_kills_at_once_whatever_the_gate() {
        let now = Instant::now();
        let mut shut = State::new(true);
        shut.stop(Once(INT), now, GRACE);
        assert_eq!(
            shut.stop(Twice(INT), now, GRACE),
            [Action::Signal(Signal::SIGKILL)]
        );
        let mut open = State::new(true);
        open.open(Word::Live);
        open.stop(Once(INT), now, GRACE);
        assert_eq!(
            open.stop(Twice(INT), now, GRACE),
            [Action::Signal(Signal::SIGKILL)]
        );
        assert_eq!(open.tick(now + GRACE), [], "no second SIGKILL");
        let mut late = State::new(false);
        assert_eq!(
            late.stop(Twice(INT), now, GRACE),
            [Action::Signal(Signal::SIGKILL)]
        );
    }

    #[test]
    fn a_stopped_run_opens_no_gate_and_runs_nothing_again() {
        let now = Instant::now();
        let mut state = State::new(true);
        state.stop(Once(INT), now, GRACE);
        assert_eq!(
            state.open(Word::Replay),
            [],
            "the gate was closed by the stop"
        );
        state.exited(Exit::Code(2));
        assert!(!state.runs_again(false));
    }

    #[test]
    fn a_measurement_that_ended_before_its_gate_opened_runs_again_after_the_sweep() {
        let mut state = State::new(true);
        state.exited(Exit::Code(4)); // its pytest could not load the harness
        assert_eq!(state.open(Word::Replay), [], "nobody to tell");
        assert!(state.runs_again(false));
        assert_eq!(state.status(), Some(4));
    }

    #[test]
    fn a_measurement_that_ended_with_its_line_unread_runs_again_and_one_that_read_it_does_not() {
        let mut state = State::new(true);
        state.open(Word::Replay);
        state.exited(Exit::Code(1));
        assert!(state.runs_again(true));
        assert!(
            !state.runs_again(false),
            "it read its line: its status is the run's"
        );
    }

    #[test]
    fn a_gate_closed_without_a_word_ends_the_session_and_nothing_runs_again() {
        let mut state = State::new(true);
        assert_eq!(state.close(), [Action::Close]);
        state.exited(Exit::Code(2));
        assert!(!state.runs_again(false));
        let mut late = State::new(false);
        late.exited(Exit::Signal(Signal::SIGTERM));
        assert!(!late.runs_again(false));
        assert_eq!(late.status(), Some(143));
    }

    #[test]
    fn a_stop_after_the_measurement_ended_only_closes_its_gate() {
        let now = Instant::now();
        let mut state = State::new(true);
        state.exited(Exit::Code(0));
        assert_eq!(state.stop(Once(INT), now, GRACE), [Action::Close]);
        assert_eq!(state.next_event(), None);
    }
}
