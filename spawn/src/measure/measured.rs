//! The last phase: the measurement. Started with the sweep behind its gate where COMMAND can wait
//! there ([`start_early`]); told the verdict, or run after publishing where it cannot, or ran no
//! test ([`hand_over`]); seen to its end.

use super::gate::{Gate, Word};
use super::measurement::{Measurement, Start, Told};
use super::report::Measured;
use super::rest::Rest;
use super::say::say;
use crate::signal::Signals;
use anyhow::{Context, Result};
use protocol::env;
use protocol::status::EnvChanges;
use std::ffi::OsString;
use std::path::Path;

/// The environment variables that reach the sweep's children only, never the measurement.
pub const SWEEP_ONLY: [&str; 3] = [protocol::lock::LOCK_FD, env::RESUME_DIR, env::FRESH];

fn path_text(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// The measurement started alongside the sweep, behind its gate, told that the configs will be
/// in `publish_dir`; `None` (with a line) where COMMAND cannot wait at a gate or cannot start.
pub fn start_early(
    command: &[OsString],
    publish_dir: &Path,
    signals: &Signals,
) -> Option<Measurement> {
    let addopts = std::env::var_os("PYTEST_ADDOPTS");
    let Some(argv) = protocol::command::measure_command(command, addopts.as_deref()) else {
        say("the measurement starts after the sweep: COMMAND is not a pytest command that loads warmup_harness");
        return None;
    };
    let changes = EnvChanges {
        set: vec![(env::REPLAY_DIR.to_owned(), path_text(publish_dir))],
        unset: SWEEP_ONLY.map(str::to_owned).into(),
    };
    let started = Gate::new().and_then(|gate| {
        Measurement::start(
            &argv,
            &changes,
            Some(gate),
            Start::Early,
            signals.child_setup(),
        )
    });
    match started {
        Ok(m) => {
            say(&format!(
                "the measurement (pid {}) starts alongside the sweep; it runs no test before the configs are published",
                m.pid
            ));
            Some(m)
        }
        Err(e) => {
            say(&format!(
                "cannot start the measurement alongside the sweep ({e:#}); it starts after the sweep"
            ));
            None
        }
    }
}

/// The hand-over: the gate told `word` (closed: `None`), or COMMAND run after the sweep, replaying
/// `published` where it is told to; waits for the measurement's end.
pub fn hand_over(
    rest: &mut Rest<'_>,
    word: Option<Word>,
    published: Option<&Path>,
    command: &[OsString],
) -> Result<Measured> {
    let mut measured = Measured::default();
    let mut start = Start::Late;
    if rest.measurement.is_some() {
        if let Some(done) = open_gate(rest, word, &mut measured)? {
            return Ok(done);
        }
        start = Start::Again;
    }
    let changes = match (word.unwrap_or(Word::Replay), published) {
        (Word::Replay, Some(dir)) => EnvChanges {
            set: vec![(env::REPLAY_DIR.to_owned(), path_text(dir))],
            unset: unset([env::RECORD_DIR, env::GATE].as_slice()),
        },
        _ => EnvChanges {
            set: Vec::new(),
            unset: unset(&[env::GATE]),
        },
    };
    measured.start = Some(start);
    let setup = rest.signals().child_setup();
    match Measurement::start(command, &changes, None, start, setup) {
        Ok(m) => rest.measurement = Some(m),
        Err(e) => {
            eprintln!("{}: {e:#}", crate::flags::TOOL);
            measured.status = Some(127);
            return Ok(measured);
        }
    }
    measured.told = Some(Told::NoGate);
    rest.wait(None)?;
    measured.status = rest.measurement.as_ref().and_then(|m| m.state().status());
    Ok(measured)
}

/// What a stopped run's measurement, stopped with everything else, came to once waited for.
pub fn after_stop(rest: &mut Rest<'_>) -> Result<Measured> {
    rest.wait(None)?;
    Ok(rest
        .measurement
        .as_ref()
        .map_or_else(Measured::default, |m| Measured {
            told: Some(m.state().told()),
            start: Some(m.start),
            status: m.state().status(),
        }))
}

/// Tells the early measurement `word` (or closes its gate) and waits for it: `Some` once it ran
/// its tests (or a stop came), `None` when COMMAND must run again, after the sweep.
fn open_gate(
    rest: &mut Rest<'_>,
    word: Option<Word>,
    measured: &mut Measured,
) -> Result<Option<Measured>> {
    let m = rest
        .measurement
        .as_mut()
        .context("the measurement went missing")?;
    let opened = match word {
        Some(word) => m.open(word),
        None => {
            m.close();
            false
        }
    };
    rest.wait(None)?;
    let stopped = rest.stopped().is_some();
    let m = rest
        .measurement
        .as_mut()
        .context("the measurement went missing")?;
    measured.told = Some(m.state().told());
    let unread = opened && m.unread();
    let again = match word {
        Some(_) => m.state().runs_again(unread),
        None => !stopped,
    };
    if !again {
        measured.start = Some(Start::Early);
        measured.status = m.state().status();
        return Ok(Some(*measured));
    }
    if word.is_some() {
        say(&format!(
            "the measurement ended (exit {}) before its gate opened, so it ran no test: see its output above (is warmup-harness installed where its pytest runs?); running COMMAND again, after the sweep",
            m.state().status().map_or_else(|| "?".to_owned(), |s| s.to_string())
        ));
    }
    Ok(None)
}

/// `vars` and the sweep-only variables, to unset.
fn unset(vars: &[&str]) -> Vec<String> {
    vars.iter()
        .copied()
        .chain(SWEEP_ONLY)
        .map(str::to_owned)
        .collect()
}
