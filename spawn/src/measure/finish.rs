//! `--finish`: the end of a run whose shards ran elsewhere (warmup-slurm's finishing job, after
//! its job array): warmup-merge, the judgment of each shard, warmup-publish. The judgment is this
//! tool's, as `--measure`'s is (`judgment`): which shards did not finish and in what words, which
//! folder the configs go to (the blank record folder rule), the conflict warning, the exit
//! status. It prints one run summary that the script relays line by line, so that the script
//! decides nothing: `say LINE` (a line for people), `rerun N LIST` (the shards to run again),
//! `env LINE` (the replay environment, for `eval`), `error LINE` (why it failed); the exit status
//! is the script's.
//!
//! The tools run as child tools, as `--measure`'s do, found by `tools::find`.

use crate::measure::judgment;
use anyhow::Result;
use protocol::layout::Scratch;
use protocol::replay::ReplayEnv;
use protocol::summary::{key, MergeSummary, Summary};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Stdio};
use toolkit::Status;

/// What `--finish` is given.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub scratch: &'a Path,
    pub op: &'a str,
    /// `--record-dir`; blank is none.
    pub record_dir: Option<&'a Path>,
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

/// Runs `program args...`, its stdout kept, its stderr the caller's; its exit status as a shell
/// gives it (128+N for signal N; `None`: it did not run).
fn tool(name: &str, args: &[&OsStr]) -> (Option<i32>, Vec<u8>) {
    use std::os::unix::process::ExitStatusExt;
    let run = crate::measure::tools::find(name).and_then(|program| {
        Ok(Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()?)
    });
    match run {
        Ok(out) => {
            let code = out.status.code().or(out.status.signal().map(|s| 128 + s));
            (code, out.stdout)
        }
        Err(e) => {
            eprintln!("{}: {e:#}", crate::TOOL);
            (None, Vec::new())
        }
    }
}

/// `--finish`: merges, judges, publishes; the summary on stdout.
pub fn run(req: &Request<'_>) -> Result<Status> {
    let scratch = Scratch::new(req.scratch);
    let root = req.scratch.as_os_str();
    let mut relay = Relay::default();
    let merge_args = [
        OsStr::new("--op"),
        OsStr::new(req.op),
        OsStr::new("--in-scratch"),
        root,
        OsStr::new("--summary"),
        OsStr::new("-"),
    ];
    let (code, out) = tool("warmup-merge", &merge_args);
    let code = match code {
        Some(c @ (0 | 3)) => c,
        Some(c) => {
            let why = format!("merging the shards' records failed (exit {c}, see above)");
            return relay.fail(&why, c);
        }
        None => return relay.fail("merging the shards' records failed (see above)", 2),
    };
    let Some(merged) = MergeSummary::read(&out) else {
        return relay.fail("warmup-merge's run summary is unreadable", 2);
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
    let Some(target) = publish(req, &scratch) else {
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

/// `warmup-publish --op OP --format json` into the record folder, else (blank or none) with
/// `SCRATCH/merged` as the fallback; where the configs went.
fn publish(req: &Request<'_>, scratch: &Scratch) -> Option<std::path::PathBuf> {
    let record_dir = protocol::env::record_dir_of(req.record_dir.map(Path::as_os_str));
    let fallback = scratch.fallback_records();
    let (flag, dir): (&str, OsString) = match &record_dir {
        Some(dir) => ("--record-dir", dir.clone().into_os_string()),
        None => ("--fallback-dir", fallback.into_os_string()),
    };
    let args = [
        OsStr::new("--op"),
        OsStr::new(req.op),
        OsStr::new("--format"),
        OsStr::new("json"),
        OsStr::new(flag),
        &dir,
        OsStr::new("--"),
        req.scratch.as_os_str(),
    ];
    match tool("warmup-publish", &args) {
        (Some(0), out) => ReplayEnv::replay_dir(&out),
        _ => None,
    }
}
