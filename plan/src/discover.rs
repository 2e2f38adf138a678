//! The high args: what a run of scripts/warmup is made of, discovered once, in-process and
//! without starting an interpreter: the devices, COMMAND's Python and what it has installed (the
//! Triton version, the harness), the device model, the record folder, the op, whether the
//! record answers the op, and the history's prediction. The reads are protocol's (`backend`,
//! `command`, `python`, `probe`, `history`, `predict`): each rule exists once in the house.

use crate::decision::{Facts, Gpus, Prediction, Record};
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

    fn var(&self, name: &str) -> Option<&str> {
        self.env.get(name)
    }

    /// Set and not blank.
    fn set(&self, name: &str) -> bool {
        self.var(name).is_some_and(|v| !v.trim().is_empty())
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
    /// Why the harness does not run in COMMAND, for the reason, or None.
    pub shape_file: Option<PathBuf>,
    /// Whether the record folder is the record cache's (`crate::cache`).
    pub cache: crate::cache::Cache,
}

/// The op, as every tool reads `FLAGGEMS_PERF_CURRENT_OP`.
pub fn op(world: &World) -> String {
    protocol::op::OpArg::new(world.var(names::CURRENT_OP))
        .name()
        .to_owned()
}

/// The record folder `FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR` names (trimmed, blank is none), made
/// absolute; refused when it holds a path that is not a folder.
pub fn record_dir(raw: Option<&std::ffi::OsStr>, cwd: &Path) -> Result<Option<PathBuf>> {
    let Some(dir) = names::record_dir_of(raw) else {
        return Ok(None);
    };
    let dir = toolkit::file::absolute_in(&dir, cwd);
    if let Err(why) = toolkit::file::check_folder(&dir) {
        bail!(
            "{}={}: {why}: point it at the folder the op's record is published into",
            names::RECORD_DIR,
            dir.display()
        );
    }
    Ok(Some(dir))
}

/// Discovers everything the decision reads.
pub fn discover(args: &Warmup, world: &World) -> Result<Discovery> {
    let worker = world.set(names::WARMUP_WORKER);
    let gpus = match (args.gpus, world.var(names::GPUS)) {
        (Some(n), _) => Gpus::Count(n),
        (None, None) => Gpus::Unset,
        (None, Some(text)) if text.trim().is_empty() => Gpus::Unset,
        (None, Some(text)) => match toolkit::cli::whole(text) {
            Some(n) => Gpus::Count(n),
            None => Gpus::Invalid(text.to_owned()),
        },
    };
    let raw_dir = world.env.get(names::RECORD_DIR).map(std::ffi::OsStr::new);
    let record_dir = if worker {
        None
    } else {
        record_dir(raw_dir, &world.cwd)?
    };
    let shape_file = command::shape_file_of(&args.command).map(PathBuf::from);
    let backend_name = args.spawn.backend.as_deref().unwrap_or("auto");
    let devices = backend::select(backend_name, &world.env)
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
    let root = world.env.root("/proc/driver/nvidia/gpus");
    let platform = Platform {
        triton: packages.as_ref().and_then(|p| p.triton.clone()),
        device: protocol::probe::device_model(&root, &tokens),
    };
    let derived = protocol::op::derive(world.var(names::CURRENT_OP), &args.command);
    let op = derived.name.clone();
    let (record_dir, cache) = crate::cache::resolve(record_dir, worker, world, &platform);
    let record = match &record_dir {
        Some(dir) => answers(dir, &op, &platform),
        None => Record::Misses("no record folder".into()),
    };
    let prediction = match &record_dir {
        Some(dir) if !args.by_key && !args.always => {
            predict(dir, &op, &platform, &tokens, args.gpus)
        }
        _ => Prediction::NotAsked,
    };
    let facts = Facts {
        worker,
        gpus,
        by_key: args.by_key,
        fresh: args.fresh,
        shape_file: shape_file.clone().map(|f| {
            let exists = world.cwd.join(&f).is_file();
            (f, exists)
        }),
        replay_dir_set: world.set(names::REPLAY_DIR),
        devices,
        harness,
        record_dir,
        record,
        prediction,
    };
    Ok(Discovery {
        facts,
        op,
        op_said: derived.to_string(),
        platform,
        shape_file,
        cache,
    })
}

/// By-key mode claims each key once per device: a device listed twice is refused up front, as
/// warmup-spawn would refuse the plan after the scratch was made.
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

/// Whether `dir` holds the op's record for this Triton and device model.
fn answers(dir: &Path, op: &str, platform: &Platform) -> Record {
    let record = protocol::layout::record_file(dir, op);
    if !record.metadata().is_ok_and(|m| m.is_file()) {
        return Record::Misses(format!("no {}", record.display()));
    }
    match Meta::load(&meta_path(dir, op)) {
        Ok(meta) => match meta.mismatch(platform) {
            None => Record::Answers,
            Some(why) => Record::Misses(why),
        },
        Err(why) => Record::Misses(why),
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

    fn sidecar(dir: &Path, triton: &str, device: &str) {
        std::fs::write(dir.join("mm.json"), "{}").expect("record");
        std::fs::write(
            meta_path(dir, "mm"),
            format!(r#"{{"format": "warmup-harness-meta", "version": 1, "triton": "{triton}", "device": "{device}"}}"#),
        )
        .expect("sidecar");
    }

    #[test]
    fn a_record_answers_only_for_this_triton_and_device_model() {
        let dir = tempfile::tempdir().expect("tempdir");
        let platform = Platform {
            triton: Some("3.6.0".into()),
            device: Some("NVIDIA H200".into()),
        };
        assert!(matches!(
            answers(dir.path(), "mm", &platform),
            Record::Misses(_)
        ));
        sidecar(dir.path(), "3.6.0", "NVIDIA H200");
        assert_eq!(answers(dir.path(), "mm", &platform), Record::Answers);
        sidecar(dir.path(), "3.5.1", "NVIDIA H200");
        let Record::Misses(why) = answers(dir.path(), "mm", &platform) else {
            panic!("another Triton answers");
        };
        assert!(why.contains("3.5.1"), "{why}");
        let unknown = Platform {
            triton: None,
            device: Some("NVIDIA H200".into()),
        };
        assert!(matches!(
            answers(dir.path(), "mm", &unknown),
            Record::Misses(_)
        ));
    }
}
