//! The record cache as a run of scripts/warmup meets it (docs/CONTRACT.md, "The record cache"):
//! with no record folder named, the run's records go to the cache folder of its Triton and
//! device model (`protocol::cache_dir`), which every later run reads, so that a re-run is
//! answered without the user naming anything. Deciding makes nothing: discovery only finds the
//! folder and whether it can be made and written ([`resolve`]); the step that acts on the
//! decision makes it ([`make`], through `discover::Discovery::act`). A cache that cannot be used
//! is no reason to stop: the run goes on without a record folder, and the decision's line says
//! why.

use crate::decision::{Decision, RecordFolder};
use protocol::backend::Environment;
use protocol::cache_dir;
use protocol::probe::Platform;
use std::ffi::OsString;
use std::path::PathBuf;

/// The record folder of the run: the named one, else the cache's for this platform where it can
/// be used; nothing is made.
pub fn resolve(
    named: Option<PathBuf>,
    worker: bool,
    env: &Environment,
    platform: &Platform,
) -> RecordFolder {
    if worker {
        return RecordFolder::NotUsed;
    }
    if let Some(dir) = named {
        return RecordFolder::Named(dir);
    }
    let var = |name: &str| env.get_os(name).map(OsString::from);
    let found = cache_dir::root(var).and_then(|root| {
        cache_dir::locate(
            &root,
            platform.triton.as_deref(),
            platform.device.as_deref(),
            &env.root("/"),
        )
    });
    match found {
        Ok(dir) => RecordFolder::Cache(dir),
        Err(why) => RecordFolder::CacheUnavailable(why),
    }
}

/// Acts on the decision for the record cache: a run that uses the cache's folder (reuse, record
/// or sweep) makes it and marks `op` used there (`warmup-cache remove --older-than` reads the
/// stamp); a plain run makes nothing. `Err`: why a folder that cannot be made after all (taken
/// since it was found, a full disk) is a record cache that cannot be used.
pub fn make(folder: &RecordFolder, op: &str, decision: &Decision) -> Result<(), String> {
    let RecordFolder::Cache(dir) = folder else {
        return Ok(());
    };
    if let Decision::Plain { .. } = decision {
        return Ok(());
    }
    cache_dir::make(dir)?;
    if let Some(line) = cache_dir::touch(dir, op) {
        eprintln!("[{}] warning: {line}", crate::flags::Driver::Warmup.name());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision;
    use crate::discover::World;

    fn world(vars: &[(&str, &str)]) -> World {
        World {
            env: Environment::fake(vars, std::path::Path::new("/")),
            lookup: protocol::python::Lookup::default(),
            addopts: None,
            cwd: "/".into(),
        }
    }

    const UNKNOWN: Platform = Platform {
        triton: None,
        device: None,
    };

    fn h200() -> Platform {
        Platform {
            triton: Some("3.6.0".into()),
            device: Some("NVIDIA H200".into()),
        }
    }

    fn empty(dir: &std::path::Path) -> bool {
        std::fs::read_dir(dir).expect("read").next().is_none()
    }

    #[test]
    fn a_named_folder_wins_and_a_child_uses_no_cache() {
        let home = tempfile::tempdir().expect("tempdir");
        let w = world(&[("HOME", home.path().to_str().expect("utf-8"))]);
        assert_eq!(
            resolve(Some("/named".into()), false, &w.env, &UNKNOWN),
            RecordFolder::Named("/named".into())
        );
        assert_eq!(resolve(None, true, &w.env, &UNKNOWN), RecordFolder::NotUsed);
        assert!(empty(home.path()), "nothing made");
    }

    #[test]
    fn the_cache_folder_is_found_per_platform_without_being_made() {
        let home = tempfile::tempdir().expect("tempdir");
        let w = world(&[("XDG_CACHE_HOME", home.path().to_str().expect("utf-8"))]);
        let RecordFolder::Cache(dir) = resolve(None, false, &w.env, &h200()) else {
            panic!("no cache folder");
        };
        assert!(dir.starts_with(home.path().join("parallel-warmup/records")));
        assert!(empty(home.path()), "deciding makes nothing");
        assert_ne!(
            resolve(None, false, &w.env, &UNKNOWN),
            RecordFolder::Cache(dir),
            "another platform, another folder"
        );
        let none = resolve(None, false, &world(&[]).env, &h200());
        assert!(
            matches!(none, RecordFolder::CacheUnavailable(_)),
            "{none:?}"
        );
    }

    #[test]
    fn a_device_no_file_names_gets_a_cache_folder_per_machine() {
        let (home, a, b) = (
            tempfile::tempdir(),
            tempfile::tempdir(),
            tempfile::tempdir(),
        );
        let (home, a, b) = (home.expect("home"), a.expect("a"), b.expect("b"));
        for (machine, id) in [(&a, "a1"), (&b, "b2")] {
            std::fs::create_dir_all(machine.path().join("etc")).expect("mkdir");
            std::fs::write(machine.path().join("etc/machine-id"), id).expect("write");
        }
        let on = |machine: &tempfile::TempDir, platform: &Platform| {
            let vars = [("HOME", home.path().to_str().expect("utf-8"))];
            let w = World {
                env: Environment::fake(&vars, machine.path()),
                ..world(&[])
            };
            resolve(None, false, &w.env, platform)
        };
        let unknown = Platform {
            triton: Some("3.6.0".into()),
            device: None,
        };
        assert_ne!(
            on(&a, &unknown),
            on(&b, &unknown),
            "two machines share HOME"
        );
        assert_eq!(on(&a, &unknown), on(&a, &unknown));
        assert_eq!(
            on(&a, &h200()),
            on(&b, &h200()),
            "a named model is one folder"
        );
        assert_ne!(on(&a, &unknown), on(&a, &h200()));
    }

    /// A sweep on two listed devices of a shape file in `work`, with no record folder named
    /// and the record cache under `work/cache`.
    fn sweeping_in(work: &std::path::Path) -> (crate::flags::Warmup, World) {
        use clap::Parser;
        std::fs::write(work.join("s.yaml"), "mm:\n  shapes: [[1, 2]]\n").expect("shapes");
        let cache = work.join("cache");
        let vars = [("XDG_CACHE_HOME", cache.to_str().expect("utf-8"))];
        let w = World {
            env: Environment::fake(&vars, work),
            lookup: protocol::python::Lookup::default(),
            addopts: None,
            cwd: work.to_owned(),
        };
        let args = crate::flags::Warmup::try_parse_from([
            "warmup",
            "--backend",
            "cuda",
            "--gpus",
            "2",
            "--devices",
            "0,1",
            "--",
            "true",
            "--shape_file",
            "s.yaml",
        ])
        .expect("parses");
        (args, w)
    }

    #[test]
    fn deciding_makes_nothing_and_acting_on_a_sweep_makes_the_cache_folder_and_its_stamp() {
        let work = tempfile::tempdir().expect("tempdir");
        let (args, w) = sweeping_in(work.path());
        let found = crate::discover::discover(&args, &w).expect("discovered");
        let decision = decision::decide(&found.facts);
        assert_eq!(decision.name(), "sweep", "{decision:?}");
        assert!(!work.path().join("cache").exists(), "deciding made nothing");
        let RecordFolder::Cache(dir) = found.facts.record_folder.clone() else {
            panic!("{:?}", found.facts.record_folder);
        };
        let (found, acted) = found.act(decision.clone());
        assert_eq!(acted, decision);
        assert!(dir.is_dir() && cache_dir::used_path(&dir, &found.op).is_file());
    }

    #[test]
    fn a_plain_run_makes_no_cache_folder() {
        let work = tempfile::tempdir().expect("tempdir");
        let (mut args, w) = sweeping_in(work.path());
        args.gpus = Some(1);
        let found = crate::discover::discover(&args, &w).expect("discovered");
        let decision = decision::decide(&found.facts);
        assert_eq!(decision.name(), "plain", "{decision:?}");
        found.act(decision);
        assert!(!work.path().join("cache").exists());
    }

    #[test]
    fn a_cache_folder_that_cannot_be_made_once_decided_is_decided_again_without_it() {
        let work = tempfile::tempdir().expect("tempdir");
        let (args, w) = sweeping_in(work.path());
        let found = crate::discover::discover(&args, &w).expect("discovered");
        let decision = decision::decide(&found.facts);
        assert!(
            decision.reason().contains("no usable history"),
            "{decision:?}"
        );
        // Taken since it was found: the cache's place is now a file.
        std::fs::write(work.path().join("cache"), "").expect("a file in the way");
        let (found, decision) = found.act(decision);
        let RecordFolder::CacheUnavailable(why) = &found.facts.record_folder else {
            panic!("{:?}", found.facts.record_folder);
        };
        assert!(why.starts_with("cannot make "), "{why}");
        let Decision::Sweep {
            by_history: false,
            ref reason,
            ..
        } = decision
        else {
            panic!("{decision:?}");
        };
        assert_eq!(
            reason, "the warmup runs; sweeping on 0,1",
            "no history to read"
        );
    }
}
