//! The high args: what a run of scripts/warmup is made of, discovered once, in-process and
//! without starting an interpreter: the devices, COMMAND's Python and what it has installed (the
//! Triton version, the harness), the device model, the record folder, the op, whether the
//! record answers the op, and the history's prediction. The reads are protocol's (`backend`,
//! `command`, `python`, `probe`, `history`, `predict`): each rule exists once in the house.

use crate::decision::{Decision, Facts, Gpus, Prediction, Record, RecordFolder};
use crate::flags::Warmup;
use anyhow::{bail, Result};
use protocol::backend::{self, Environment};
use protocol::command;
use protocol::env as names;
use protocol::history::{meta_path, Meta};
use protocol::probe::Platform;
use protocol::python::{self, Harness, Lookup};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The caller's environment, as one snapshot.
#[derive(Debug, Clone)]
pub struct World {
    pub env: Environment,
    pub lookup: Lookup,
    pub addopts: Option<OsString>,
    pub cwd: PathBuf,
}

impl World {
    pub fn current() -> World {
        World {
            env: Environment::current(),
            lookup: Lookup::current(),
            addopts: std::env::var_os("PYTEST_ADDOPTS"),
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
        }
    }

    pub fn var(&self, name: &str) -> Option<&str> {
        self.env.get(name)
    }

    /// Set and not blank (a value that is not UTF-8 is not blank).
    fn set(&self, name: &str) -> bool {
        self.env
            .get_os(name)
            .is_some_and(|v| !v.as_encoded_bytes().trim_ascii().is_empty())
    }
}

/// What was discovered, beyond the facts the decision reads.
#[derive(Debug, Clone)]
pub struct Discovery {
    pub facts: Facts,
    pub op: String,
    /// The op and why it is the one (`op mm (from -m mm)`), for the opening line.
    pub op_said: String,
    pub platform: Platform,
    /// The shape file COMMAND names, as given.
    pub shape_file: Option<PathBuf>,
    /// This run's signature (`protocol::signature`): a sidecar whose `complete_for`
    /// holds it vouches that its record holds every key this run needs.
    pub signature: String,
    /// Why this user cannot write in the record folder, which is there to read (another user's,
    /// a read-only mount): it is replayed and resumed from, and nothing is recorded there.
    pub read_only: Option<String>,
}

impl Discovery {
    /// Acts on `decision` for the record cache (`cache::make`); where its folder cannot be made
    /// after all, the run is decided again without it, as discovery would have found it.
    pub fn act(self, decision: Decision) -> (Discovery, Decision) {
        match crate::cache::make(&self.facts.record_folder, &self.op, &decision) {
            Ok(()) => (self, decision),
            Err(why) => {
                let found = self.without_cache(why);
                let decision = crate::decision::decide(&found.facts);
                (found, decision)
            }
        }
    }

    /// The same run where the record cache cannot be used (`why`): no record folder to read
    /// a record or a history from, as discovery finds it then.
    pub fn without_cache(mut self, why: String) -> Discovery {
        self.facts.record_folder = RecordFolder::CacheUnavailable(why);
        self.read_only = None;
        (self.facts.record, self.facts.prediction) = unread();
        self
    }
}

/// The record folder `FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR` names (trimmed, blank is none), made
/// absolute and checked ([`checked_record_dir`]).
pub fn record_dir(raw: Option<&std::ffi::OsStr>, cwd: &Path) -> Result<Option<PathBuf>> {
    let Some(dir) = names::record_dir_of(raw) else {
        return Ok(None);
    };
    checked_record_dir(toolkit::file::absolute_in(&dir, cwd), names::RECORD_DIR).map(Some)
}

/// `dir`, which `source` (a variable or an option) names: refused when it is not a folder, or is
/// none and cannot be made. One that is there is read even where it cannot be written
/// (`Discovery::read_only`).
pub fn checked_record_dir(dir: PathBuf, source: &str) -> Result<PathBuf> {
    if let Err(why) = toolkit::file::check_folder(&dir) {
        bail!(
            "{source}={}: {why}: point it at the folder the op's record is published into",
            dir.display()
        );
    }
    if !dir.is_dir() {
        if let Err(why) = toolkit::file::writable(&dir) {
            bail!(
                "{source}={}: {why}: point it at a folder this user can write",
                dir.display()
            );
        }
    }
    Ok(dir)
}

/// Discovers everything the decision reads. It reads and makes nothing in the record cache
/// ([`Discovery::act`] makes its folder once the run is decided).
pub fn discover(args: &Warmup, world: &World) -> Result<Discovery> {
    let worker = world.set(names::WARMUP_WORKER);
    let named = if worker {
        None
    } else {
        record_dir(world.env.get_os(names::RECORD_DIR), &world.cwd)?
    };
    let shape_file = command::shape_file_of(&args.command).map(PathBuf::from);
    let backend_name = args.spawn.backend.as_deref().unwrap_or("auto");
    let devices = backend::select_for(backend_name, &world.env, args.devices.is_some())
        .and_then(|b| backend::devices(b, args.devices.as_deref(), &world.env))
        .map_err(|e| format!("{e:#}"));
    if args.by_key {
        if let Some(list) = &args.devices {
            refuse_repeats(list)?;
        }
    }
    let python = command::python_of(&args.command, world.lookup.path.as_deref());
    let packages = python
        .as_deref()
        .map(|p| python::packages(p, &world.lookup));
    let harness = harness_runs(args, world, packages.as_ref());
    let tokens = devices.clone().unwrap_or_default();
    let platform = Platform {
        triton: packages.as_ref().and_then(|p| p.triton.clone()),
        device: protocol::probe::device_name(&world.env.root("/"), &tokens),
    };
    let derived = protocol::op::derive(world.var(names::CURRENT_OP), &args.command);
    let op = derived.name.clone();
    let record_folder = crate::cache::resolve(named, worker, &world.env, &platform);
    let versions = packages
        .as_ref()
        .map(|p| (p.triton.as_deref(), p.flag_gems.as_deref()));
    let (triton, flag_gems) = versions.unwrap_or_default();
    let signature = protocol::signature::signature(
        &op,
        &args.command,
        &world.cwd,
        &[("triton", triton), ("flag_gems", flag_gems)],
    );
    let (record, prediction) = match record_folder.dir() {
        Some(dir) => (
            answers(dir, &op, &platform, &signature),
            if args.by_key || args.always {
                Prediction::NotAsked
            } else {
                predict(dir, &op, &platform, &tokens, args.gpus)
            },
        ),
        None => unread(),
    };
    let record_folder_dir = record_folder.dir().map(Path::to_path_buf);
    let facts = Facts {
        op: op.clone(),
        worker,
        flaggems_parallel: command::flaggems_parallel_of(&args.command),
        gpus: gpus(args.gpus, world.var(names::GPUS)),
        by_key: args.by_key,
        fresh: args.fresh,
        shape_file: shape_file.clone().map(|f| {
            let exists = world.cwd.join(&f).is_file();
            (f, exists)
        }),
        replay_dir_set: world.set(names::REPLAY_DIR),
        devices,
        harness,
        record_folder,
        record,
        prediction,
    };
    Ok(Discovery {
        facts,
        op,
        op_said: derived.to_string(),
        platform,
        shape_file,
        signature,
        read_only: record_folder_dir
            .filter(|dir| dir.is_dir())
            .and_then(|dir| toolkit::file::writable(&dir).err()),
    })
}

/// The GPU count: `--gpus`, else `PARALLEL_WARMUP_GPUS` (blank is unset).
fn gpus(given: Option<u64>, var: Option<&str>) -> Gpus {
    match (given, var) {
        (Some(n), _) => Gpus::Count(n),
        (None, None) => Gpus::Unset,
        (None, Some(text)) if text.trim().is_empty() => Gpus::Unset,
        (None, Some(text)) => match toolkit::cli::whole(text) {
            Some(n) => Gpus::Count(n),
            None => Gpus::Invalid(text.to_owned()),
        },
    }
}

/// What a run with no record folder knows of the op's record and history: nothing.
fn unread() -> (Record, Prediction) {
    (
        Record::Misses("no record folder".into()),
        Prediction::NotAsked,
    )
}

/// By-key mode claims each key once per device: a device listed twice is refused up front, as
/// warmup-spawn would refuse it after warmup-shard wrote the shard plan.
pub fn refuse_repeats(list: &str) -> Result<()> {
    let tokens = backend::parse_list(list)?;
    for (i, t) in tokens.iter().enumerate() {
        if tokens[..i].contains(t) {
            bail!(
                "--devices {list:?}: device {t} is listed twice; --by-key runs one child per device (list each once)"
            );
        }
    }
    Ok(())
}

/// Whether the harness runs in COMMAND's pytest: installed where its Python looks (or named
/// with `-p warmup_harness` where it is a package folder on the path), and not blocked.
fn harness_runs(
    args: &Warmup,
    world: &World,
    packages: Option<&python::Packages>,
) -> Result<(), String> {
    let Some(using) = command::plugin_use(&args.command, world.addopts.as_deref()) else {
        return Err("COMMAND is not a pytest command".into());
    };
    if using.blocked {
        return Err("COMMAND says -p no:warmup_harness".into());
    }
    if using.xdist {
        return Err("COMMAND runs pytest-xdist workers".into());
    }
    let Some(packages) = packages else {
        return Err("COMMAND's Python cannot be told".into());
    };
    let autoload = !world.set("PYTEST_DISABLE_PLUGIN_AUTOLOAD");
    match packages.harness {
        Harness::Installed if autoload || using.named => Ok(()),
        Harness::Folder if using.named => Ok(()),
        Harness::Absent => Err(format!(
            "warmup_harness is not installed for {}",
            packages.python.display()
        )),
        _ => Err("warmup_harness is not loaded: add -p warmup_harness".into()),
    }
}

/// Whether `dir` answers every key of this run: `<op>.json` is a record file (`{kernel: {key:
/// config}}`, as the harness would read it), its sidecar names this Triton and device model (a
/// device unknown on either side is the harness's to check, key by key), and its `complete_for`
/// is this run's signature: the last run that finished with nothing missing was this one.
fn answers(dir: &Path, op: &str, platform: &Platform, signature: &str) -> Record {
    let record = protocol::layout::record_file(dir, op);
    if !record.metadata().is_ok_and(|m| m.is_file()) {
        return Record::Misses(format!("no {}", record.display()));
    }
    let meta = match Meta::load(&meta_path(dir, op)) {
        Ok(meta) => meta,
        Err(why) => return Record::Misses(why),
    };
    if let Some(why) = meta.replay_mismatch(platform) {
        return Record::Misses(why);
    }
    if meta.complete_for.as_deref() != Some(signature) {
        let field = protocol::history::COMPLETE_FOR;
        return Record::Misses(format!(
            "{} names no complete run of this COMMAND, its shape file, test files and \
             package versions ({}, this run's is {signature}): the record may lack keys this \
             run needs",
            meta.path.display(),
            match &meta.complete_for {
                Some(s) => format!("its {field} is {s}"),
                None => format!("no {field}"),
            }
        ));
    }
    let name = record.display().to_string();
    match toolkit::file::read(&record) {
        Err(e) => Record::Misses(format!("{name} cannot be read ({e})")),
        Ok(bytes) => match protocol::records::Records::parse(&bytes) {
            Err(why) => Record::Damaged(format!("{}: it is no record", why.located(&name))),
            Ok(records) => match records.bad_buckets.first() {
                Some(bad) => Record::Damaged(format!("{name}: {bad}: it is no record")),
                None => Record::Answers,
            },
        },
    }
}

/// The prediction for a sweep on the devices it would use.
fn predict(
    dir: &Path,
    op: &str,
    platform: &Platform,
    tokens: &[String],
    gpus: Option<u64>,
) -> Prediction {
    let take = gpus
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(tokens.len())
        .min(tokens.len());
    let used = &tokens[..take];
    if used.is_empty() {
        return Prediction::NotAsked;
    }
    match protocol::predict::usable(dir, op, || platform.clone(), used) {
        Ok((_, f)) => Prediction::Figures {
            warmup: f.warmup,
            plain: f.plain,
            worth: f.worth(),
        },
        Err(why) => Prediction::Unusable(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_folder_that_is_a_file_is_refused_and_blank_is_none() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("f");
        std::fs::write(&file, "").expect("write");
        let err = record_dir(Some(file.as_os_str()), dir.path()).expect_err("a file");
        assert!(format!("{err:#}").contains("is not a folder"), "{err:#}");
        assert_eq!(
            record_dir(Some(" ".as_ref()), dir.path()).expect("blank"),
            None
        );
        let odd = record_dir(Some("a\nb ".as_ref()), dir.path()).expect("carried whole");
        assert_eq!(odd, Some(dir.path().join("a\nb")));
    }

    #[test]
    fn by_key_refuses_a_device_listed_twice() {
        assert!(refuse_repeats("0,1").is_ok());
        let err = refuse_repeats("0, 1,0").expect_err("twice");
        assert!(
            format!("{err:#}").contains("device 0 is listed twice"),
            "{err:#}"
        );
    }

    const SIG: &str = "0123456789abcdef0123456789abcdef";

    fn sidecar_with(dir: &Path, fields: &str) {
        std::fs::write(
            meta_path(dir, "mm"),
            format!(r#"{{"format": "warmup-harness-meta", "version": 1, {fields}}}"#),
        )
        .expect("sidecar");
    }

    fn sidecar(dir: &Path, triton: &str, device: &str) {
        std::fs::write(dir.join("mm.json"), r#"{"k": {"[1]": {"num_warps": 4}}}"#).expect("record");
        sidecar_with(
            dir,
            &format!(r#""triton": "{triton}", "device": "{device}", "complete_for": "{SIG}""#),
        );
    }

    fn h200() -> Platform {
        Platform {
            triton: Some("3.6.0".into()),
            device: Some("NVIDIA H200".into()),
        }
    }

    fn misses(dir: &Path, platform: &Platform) -> String {
        match answers(dir, "mm", platform, SIG) {
            Record::Misses(why) | Record::Damaged(why) => why,
            Record::Answers => panic!("answers"),
        }
    }

    #[test]
    fn a_record_answers_only_for_this_triton_and_device_model() {
        let dir = tempfile::tempdir().expect("tempdir");
        let platform = h200();
        assert!(misses(dir.path(), &platform).starts_with("no "));
        sidecar(dir.path(), "3.6.0", "NVIDIA H200");
        assert_eq!(answers(dir.path(), "mm", &platform, SIG), Record::Answers);
        sidecar(dir.path(), "3.5.1", "NVIDIA H200");
        assert!(misses(dir.path(), &platform).contains("3.5.1"));
        let unknown = Platform {
            triton: None,
            device: Some("NVIDIA H200".into()),
        };
        assert!(misses(dir.path(), &unknown).contains("Triton"));
        // Names are compared exactly, as the harness compares them.
        sidecar(dir.path(), "3.6.0", "NVIDIA H200 ");
        assert!(misses(dir.path(), &platform).contains("device"));
    }

    #[test]
    fn a_device_no_one_can_name_is_left_to_the_harness_but_another_named_one_is_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        sidecar(dir.path(), "3.6.0", "AMD Instinct MI300X");
        assert!(misses(dir.path(), &h200()).contains("device"));
        let nameless = Platform {
            triton: Some("3.6.0".into()),
            device: None,
        };
        assert_eq!(answers(dir.path(), "mm", &nameless, SIG), Record::Answers);
    }

    #[test]
    fn a_record_answers_only_a_run_its_sidecar_names_as_complete() {
        let dir = tempfile::tempdir().expect("tempdir");
        sidecar(dir.path(), "3.6.0", "NVIDIA H200");
        let other = answers(
            dir.path(),
            "mm",
            &h200(),
            "ffffffffffffffffffffffffffffffff",
        );
        let Record::Misses(why) = other else {
            panic!("another run's signature answers");
        };
        assert!(why.contains("no complete run"), "{why}");
        sidecar_with(dir.path(), r#""triton": "3.6.0", "device": "NVIDIA H200""#);
        assert!(misses(dir.path(), &h200()).contains("(no complete_for, this run's is "));
    }

    #[test]
    fn a_record_that_is_no_record_never_answers_and_says_what_is_wrong() {
        let dir = tempfile::tempdir().expect("tempdir");
        sidecar(dir.path(), "3.6.0", "NVIDIA H200");
        let record = dir.path().join("mm.json");
        for (bytes, says) in [
            (&b""[..], "empty file"),
            (b"{\"k\": {\"[1]\": ", "cut off"),
            (b"[1, 2]", "top level is an array"),
            (b"{\"k\": {\"[1]\": 1}}\0", "mm.json:1:"),
            (b"{\"k\": [1]}", "kernel \"k\" holds an array"),
        ] {
            std::fs::write(&record, bytes).expect("record");
            let why = misses(dir.path(), &h200());
            assert!(
                why.contains(says) && why.contains("mm.json"),
                "{bytes:?}: {why}"
            );
        }
    }
}
