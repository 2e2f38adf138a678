//! What warmup-plan prints: shell assignments for a driver to `eval` (`--format sh`, quoted by
//! toolkit's one shell rule, so a path with spaces or a newline is carried whole), or one JSON
//! object for people and tests (`--format json`). The names are docs/CONTRACT.md's
//! ("warmup-plan").

use crate::decision::{Decision, RecordFolder};
use crate::discover::Discovery;
use crate::flags::Warmup;
use protocol::env as names;
use std::ffi::{OsStr, OsString};
use std::path::Path;
use toolkit::shell::quote_bytes;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Sh,
    Json,
}

#[derive(Debug, Clone)]
enum Value {
    Text(OsString),
    List(Vec<OsString>),
    Export(OsString),
}

/// The assignments, in the order they are printed.
#[derive(Debug, Clone, Default)]
pub struct Output {
    entries: Vec<(String, Value)>,
}

impl Output {
    pub fn set(&mut self, name: &str, value: impl AsRef<OsStr>) -> &mut Self {
        self.entries
            .push((name.to_owned(), Value::Text(value.as_ref().to_os_string())));
        self
    }

    pub fn list(&mut self, name: &str, words: Vec<OsString>) -> &mut Self {
        self.entries.push((name.to_owned(), Value::List(words)));
        self
    }

    pub fn export(&mut self, name: &str, value: impl AsRef<OsStr>) -> &mut Self {
        self.entries.push((
            name.to_owned(),
            Value::Export(value.as_ref().to_os_string()),
        ));
        self
    }

    /// `--help`: `decision=help` and the text the driver prints.
    pub fn help(text: String) -> Output {
        let mut out = Output::default();
        out.set("decision", "help").set("text", text);
        out
    }

    pub fn render(&self, format: Format) -> Vec<u8> {
        match format {
            Format::Sh => self.sh(),
            Format::Json => {
                let mut object = serde_json::Map::new();
                let mut env = serde_json::Map::new();
                let text = |t: &OsString| serde_json::Value::from(t.to_string_lossy().into_owned());
                for (name, value) in &self.entries {
                    match value {
                        Value::Text(t) => {
                            object.insert(name.clone(), text(t));
                        }
                        Value::List(l) => {
                            object.insert(name.clone(), l.iter().map(text).collect());
                        }
                        Value::Export(t) => {
                            env.insert(name.clone(), text(t));
                        }
                    }
                }
                object.insert("env".into(), env.into());
                let mut bytes = serde_json::Value::from(object).to_string().into_bytes();
                bytes.push(b'\n');
                bytes
            }
        }
    }

    fn sh(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (name, value) in &self.entries {
            match value {
                Value::Text(t) => {
                    out.extend_from_slice(name.as_bytes());
                    out.push(b'=');
                    out.extend(quote_bytes(t.as_encoded_bytes()));
                }
                Value::Export(t) => {
                    out.extend_from_slice(b"export ");
                    out.extend_from_slice(name.as_bytes());
                    out.push(b'=');
                    out.extend(quote_bytes(t.as_encoded_bytes()));
                }
                Value::List(l) => {
                    out.extend_from_slice(name.as_bytes());
                    out.extend_from_slice(b"=(");
                    for (i, w) in l.iter().enumerate() {
                        if i > 0 {
                            out.push(b' ');
                        }
                        out.extend(quote_bytes(w.as_encoded_bytes()));
                    }
                    out.push(b')');
                }
            }
            out.push(b'\n');
        }
        out
    }
}

fn path(p: &Path) -> OsString {
    p.as_os_str().to_os_string()
}

/// Where the run uses the record cache and no file names its device: that the folder is this
/// machine's alone (docs/CONTRACT.md, "Device names").
fn unnamed(found: &Discovery) -> String {
    match (&found.facts.record_folder, &found.platform.device) {
        (RecordFolder::Cache(dir), None) => format!(
            " (no driver file names this device: the record cache's folder {} is this machine's own)",
            dir.file_name().unwrap_or_default().to_string_lossy()
        ),
        _ => String::new(),
    }
}

/// scripts/warmup's assignments for `decision`.
pub fn warmup(args: &Warmup, found: &Discovery, decision: &Decision) -> Output {
    let mut out = Output::default();
    // Where COMMAND runs with the harness's variables, the reason says which op and why.
    let reason = match (decision, &found.read_only) {
        (Decision::Plain { reason }, _) => reason.clone(),
        (_, None) => format!("{}: {}{}", found.op_said, decision.reason(), unnamed(found)),
        (_, Some(why)) => format!(
            "{}: {}{}; but {why}: the folder is only read, a key it lacks is tuned without being \
             recorded (make it writable, or set {} to a folder this user can write)",
            found.op_said,
            decision.reason(),
            unnamed(found),
            names::RECORD_DIR
        ),
    };
    out.set("decision", decision.name())
        .set("reason", reason)
        .set("op", &found.op)
        .set(
            "record_dir",
            found
                .facts
                .record_folder
                .dir()
                .map(path)
                .unwrap_or_default(),
        )
        .set("signature", &found.signature)
        .set(
            "device",
            found.platform.device.as_deref().unwrap_or_default(),
        )
        .set(
            "record_cache",
            if matches!(found.facts.record_folder, RecordFolder::Cache(_)) {
                "1"
            } else {
                "0"
            },
        );
    if !matches!(decision, Decision::Plain { .. }) {
        // The op the run derived reaches COMMAND, the tools and the children alike.
        out.export(names::CURRENT_OP, &found.op);
    }
    match decision {
        Decision::Plain { .. } => {}
        Decision::Reuse { dir, .. } | Decision::Record { dir, .. } => {
            for (name, value) in one_process(args, found, dir) {
                out.export(name, &value);
            }
        }
        Decision::Sweep {
            devices,
            by_history,
            by_key,
            ..
        } => sweep(&mut out, args, found, devices, *by_history, *by_key),
    }
    // Racing is the harness's default: only an option given exports it, over the environment's.
    if (args.race || args.no_race) && !matches!(decision, Decision::Plain { .. }) {
        out.export(names::RACE, if args.race { "1" } else { "0" });
    }
    out.list("command", args.command.clone());
    out
}

/// COMMAND run once by the harness over the record folder DIR: recording into it, resuming from
/// it (`WARMUP_HARNESS_FRESH=1` instead with `--fresh`) and naming the run's signature; where this
/// user cannot write it, replaying it (what it holds is pinned) and writing nothing, blank being
/// unset over the caller's variable. `reuse` and `record` run so, and a sweep's fallback does.
fn one_process(args: &Warmup, found: &Discovery, dir: &Path) -> Vec<(&'static str, OsString)> {
    if found.read_only.is_some() {
        let mut env = vec![(names::RECORD_DIR, OsString::new())];
        if !args.fresh {
            env.push((names::REPLAY_DIR, path(dir)));
        }
        return env;
    }
    let mut env = vec![
        (names::RECORD_DIR, path(dir)),
        (names::SIGNATURE, OsString::from(&found.signature)),
    ];
    env.extend(protocol::env::resume_env(args.fresh, Some(dir.as_os_str())));
    env
}

/// Where the script cannot sweep after all (fewer than 2 shapes to split, no scratch, shapes it
/// cannot read): with the harness in COMMAND and a record folder, COMMAND runs once as `record`
/// does, so that no key the folder holds is tuned again (`fallback_env`, `fallback`); else
/// unchanged (both empty).
fn fallback(out: &mut Output, args: &Warmup, found: &Discovery) {
    let (env, said) = match found.facts.record_folder.dir() {
        Some(dir) if found.facts.harness.is_ok() => {
            let said = if found.read_only.is_some() {
                format!("one process instead, replaying {}", dir.display())
            } else {
                format!(
                    "one process instead, recording into {} and resuming from it",
                    dir.display()
                )
            };
            (one_process(args, found, dir), said)
        }
        _ => (Vec::new(), String::new()),
    };
    let words = env
        .into_iter()
        .map(|(name, value)| {
            let mut word = OsString::from(name);
            word.push("=");
            word.push(value);
            word
        })
        .collect();
    out.set("fallback", said).list("fallback_env", words);
}

fn sweep(
    out: &mut Output,
    args: &Warmup,
    found: &Discovery,
    devices: &[String],
    by_history: bool,
    by_key: bool,
) {
    let device_list = devices.join(",");
    let mut shard = vec![
        OsString::from("--shards"),
        OsString::from(devices.len().to_string()),
    ];
    if by_key {
        shard.push("--by-key".into());
    } else {
        shard.extend(args.split.argv());
        match (found.facts.record_folder.dir(), &args.split.costs) {
            (Some(dir), None) if by_history => {
                shard.extend([
                    "--history".into(),
                    path(dir),
                    "--devices".into(),
                    (&device_list).into(),
                ]);
                if let Some(v) = &found.platform.triton {
                    shard.extend(["--triton".into(), v.into()]);
                }
                if let Some(m) = &found.platform.device {
                    shard.extend(["--device-model".into(), m.into()]);
                }
            }
            _ if args.split.strategy.is_none() => {
                shard.extend(["--strategy".into(), "lpt".into()]);
            }
            _ => {}
        }
        shard.push("--".into());
        shard.extend(found.shape_file.as_deref().map(path));
    }
    out.set("devices", &device_list)
        .set("shards", devices.len().to_string())
        .set(
            "shape_file",
            found.shape_file.as_deref().map(path).unwrap_or_default(),
        )
        .set(
            "costs",
            args.split.costs.as_deref().map(path).unwrap_or_default(),
        )
        .set(
            "scratch",
            args.scratch.as_deref().map(path).unwrap_or_default(),
        )
        .set("discard", if discards_scratch(args) { "1" } else { "0" })
        .set("by_key", if by_key { "1" } else { "0" })
        .set("fresh", if args.fresh { "1" } else { "0" })
        .list("shard_argv", shard)
        .list("spawn_argv", measure_argv(args, found));
    fallback(out, args, found);
    // The record cache is the run's record folder as a named one would be: the measurement gets
    // it too, so that a key it tunes live (a failed shard's) is kept for the next run.
    // One that cannot be written is only resumed from: the configs go to the scratch.
    match &found.facts.record_folder {
        _ if found.read_only.is_some() => {
            out.export(names::RECORD_DIR, "");
        }
        RecordFolder::Cache(dir) => {
            out.export(names::RECORD_DIR, path(dir));
        }
        _ => {}
    }
}

/// The scratch's discard rule, the one scripts/warmup and warmup-spawn follow (`discard`,
/// `--discard-scratch`): the script makes the scratch (no `--scratch`) and `--keep` is not given.
fn discards_scratch(args: &Warmup) -> bool {
    args.scratch.is_none() && !args.keep
}

/// warmup-spawn's options for the sweep and the measurement: the ones given, then `--measure`,
/// `--discard-scratch` where the script makes the scratch (no `--scratch`) and `--keep` is not
/// given, the record folder once (`--record-dir`: warmup-spawn publishes into it and its children
/// resume from it; `--resume-dir` where it cannot be written, only resumed from), `--fresh`
/// (warmup-spawn turns them into the children's environment by `protocol::env::resume_env`), and
/// `--measure-after` where it cannot tell that the harness runs in COMMAND.
fn measure_argv(args: &Warmup, found: &Discovery) -> Vec<OsString> {
    let mut argv = args.spawn.argv();
    argv.push("--measure".into());
    if discards_scratch(args) {
        argv.push("--discard-scratch".into());
    }
    if let Some(dir) = found.facts.record_folder.dir() {
        let flag = match found.read_only {
            None => "--record-dir",
            Some(_) => "--resume-dir",
        };
        argv.extend([flag.into(), path(dir)]);
    }
    if args.fresh {
        argv.push("--fresh".into());
    }
    argv.extend(["--signature".into(), (&found.signature).into()]);
    // Without the harness COMMAND cannot wait at the gate: `-p warmup_harness` would fail it.
    if found.facts.harness.is_err() {
        argv.push("--measure-after".into());
    }
    argv
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sh_assignments_carry_every_byte_whole() {
        let mut out = Output::default();
        out.set("record_dir", "/a dir/with\nnewline")
            .list("argv", vec!["-x".into(), "it's".into()])
            .export("NAME", "$HOME");
        let text = String::from_utf8(out.render(Format::Sh)).expect("utf-8");
        assert_eq!(
            text,
            "record_dir='/a dir/with\nnewline'\nargv=(-x 'it'\\''s')\nexport NAME='$HOME'\n"
        );
        let json: serde_json::Value =
            serde_json::from_slice(&out.render(Format::Json)).expect("json");
        assert_eq!(json["record_dir"], "/a dir/with\nnewline");
        assert_eq!(json["env"]["NAME"], "$HOME");
        assert_eq!(json["argv"][1], "it's");
    }
}
