//! `--finish`: the end of a run whose shards ran elsewhere (warmup-slurm's finishing job, after
//! its job array): warmup-merge, the judgment of each shard, warmup-publish. The judgment is this
//! tool's, as `--measure`'s is (`judgment`): which shards did not finish and in what words, which
//! folder the configs go to (the record folder, else `SCRATCH/merged`), the conflict warning, the
//! exit status. It prints one run summary that the script relays line by line, so that the
//! script decides nothing: after the version line, a `say LINE` for each shard that did not
//! finish, `rerun N LIST` (the shards to run again), then `env LINE`s (the replay environment,
//! for `eval`) and the `say` lines of what was published; or, where it failed, `error LINE` (why)
//! last. The exit status is the script's.
//!
//! The tools run as `--measure`'s do, through the same runner ([`Rest::tool`]): each in its own
//! process group, supervised, under the scratch lock this run takes and lends them.

use super::judgment::{self, Merged};
use super::merged;
use super::place::Place;
use super::published;
use super::rest::{Rest, ToolEnd};
use crate::signal::{Shutdown, Signals};
use anyhow::Result;
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use protocol::layout::Scratch;
use protocol::replay::ReplayEnv;
use protocol::summary::{key, Summary};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use toolkit::Status;

/// What `--finish` is given.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub scratch: &'a Path,
    pub op: &'a str,
    /// The record folder (`protocol::env::record_folder`); `None`: `SCRATCH/merged`.
    pub record_dir: Option<&'a Path>,
    /// Between SIGTERM and SIGKILL, where a second stop kills a tool.
    pub grace: Duration,
}

/// The summary being written (`protocol::summary`'s writer), and the status it ends with.
#[derive(Debug, Default)]
struct Relay {
    summary: Summary,
}

impl Relay {
    fn line(&mut self, name: &str, rest: &[u8]) {
        self.summary.lines(name, rest);
    }

    fn say(&mut self, line: &str) {
        self.line(key::SAY, line.as_bytes());
    }

    /// Ends with `error LINE`, and prints it all.
    fn fail(mut self, why: &str, status: i32) -> Result<Status> {
        self.line(key::ERROR, why.as_bytes());
        self.end(status)
    }

    /// Ends with `error LINE` saying that `sig` stopped the run, and prints it all; 128+N.
    fn stopped(mut self, sig: Signal) -> Result<Status> {
        self.line(key::ERROR, format!("stopped by {sig}").as_bytes());
        self.summary.write(Path::new("-"))?;
        Ok(Status::Signalled(sig as i32))
    }

    /// Prints it all; the exit status is `status`.
    fn end(self, status: i32) -> Result<Status> {
        self.summary.write(Path::new("-"))?;
        Ok(match status {
            0 => Status::Done,
            1 => Status::Partial,
            3 => Status::NothingToDo,
            n => Status::Passed(u8::try_from(n).unwrap_or(u8::MAX)),
        })
    }
}

/// `--finish`: merges, judges, publishes, the tools run under the scratch lock and supervised
/// (`parent`: the caller whose death stops the run); the summary on stdout.
pub fn run(req: &Request<'_>, parent: Pid) -> Result<Status> {
    let scratch = Scratch::new(req.scratch);
    let _lock = scratch.lock(crate::flags::TOOL)?;
    let place = Place::new(&scratch, req.op, req.record_dir.map(Path::to_path_buf));
    let signals = Signals::install(parent)?;
    let mut shutdown = Shutdown::default();
    let mut rest = Rest::new(&signals, &mut shutdown, req.grace, None);
    let mut relay = Relay::default();
    let merged = merged::merge(&mut rest, &place);
    if let Some(sig) = rest.stopped() {
        return relay.stopped(sig);
    }
    let (code, merged) = match merged {
        Merged::Configs(summary) => (0, summary),
        Merged::Nothing(Some(summary)) => (3, summary),
        Merged::Nothing(None) => {
            return relay.fail("warmup-merge's run summary is unreadable", 2);
        }
        Merged::Failed(Some(c)) => {
            let why = format!("merging the shards' records failed (exit {c}, see above)");
            return relay.fail(&why, c);
        }
        Merged::Failed(None) => {
            return relay.fail("merging the shards' records failed (see above)", 2);
        }
    };
    let unfinished = judgment::unfinished(&merged, &scratch);
    for (_, line) in &unfinished {
        relay.say(line);
    }
    if !unfinished.is_empty() {
        let list: Vec<String> = unfinished.iter().map(|(i, _)| i.to_string()).collect();
        let rerun = format!("{} {}", list.len(), list.join(","));
        relay.line(key::RERUN, rerun.as_bytes());
    }
    if code == 3 {
        let why = format!("no configs recovered from the {} shards", merged.inputs);
        return relay.fail(&why, 3);
    }
    let target = publish(&mut rest, &place);
    if let Some(sig) = rest.stopped() {
        return relay.stopped(sig);
    }
    let Some(target) = target else {
        let why = format!(
            "publishing the merged configs of {} failed (see above)",
            req.scratch.display()
        );
        return relay.fail(&why, 2);
    };
    relay.line(
        key::ENV,
        &protocol::replay::sh(target.as_os_str().as_bytes(), Some(req.op)),
    );
    for line in judgment::finished(&merged, unfinished.len(), &target, req.op) {
        relay.say(&line);
    }
    relay.end(if unfinished.is_empty() { 0 } else { 1 })
}

/// `warmup-publish` into the record folder, else `SCRATCH/merged`, as `--measure` runs it;
/// where the configs went.
fn publish(rest: &mut Rest<'_>, place: &Place<'_>) -> Option<PathBuf> {
    match published::publish(rest, &place.publish_dir, place, None) {
        ToolEnd::Done(out) => ReplayEnv::replay_dir(&out),
        ToolEnd::Failed(_) => None,
    }
}
