//! The record cache as a run of scripts/warmup meets it (docs/CONTRACT.md, "The record cache"):
//! with no record folder named, the run's records go to the cache folder of its Triton and
//! device model (`protocol::cache_dir`), which every later run reads, so that a re-run is
//! answered without the user naming anything. A cache that cannot be made or written is no
//! reason to stop: the run goes on without a record folder, and the line says why.

use crate::decision::Decision;
use crate::discover::{Discovery, World};
use protocol::cache_dir;
use protocol::probe::Platform;
use std::ffi::OsString;
use std::path::PathBuf;

/// Where the run's record folder came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cache {
    /// `FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR` names it, or this is a warmup child: no cache.
    NotUsed,
    /// The cache folder of this Triton and device model, made and writable.
    Folder(PathBuf),
    /// The cache cannot be used: why.
    Unavailable(String),
}

/// The record folder of the run: the named one, else the cache's for this platform.
pub fn resolve(
    named: Option<PathBuf>,
    worker: bool,
    world: &World,
    platform: &Platform,
) -> (Option<PathBuf>, Cache) {
    if named.is_some() || worker {
        return (named, Cache::NotUsed);
    }
    let var = |name: &str| world.env.get_os(name).map(OsString::from);
    let made = cache_dir::root(var).and_then(|root| {
        cache_dir::prepare(
            &root,
            platform.triton.as_deref(),
            platform.device.as_deref(),
        )
    });
    match made {
        Ok(dir) => (Some(dir.clone()), Cache::Folder(dir)),
        Err(why) => (None, Cache::Unavailable(why)),
    }
}

/// The decision, given what the cache is: a one-process record with no folder to record into
/// (the cache cannot be used) runs COMMAND unchanged, saying why; a run that uses the cache marks
/// the op used there (`warmup-cache remove --older-than` reads it).
pub fn settle(decision: Decision, found: &Discovery) -> Decision {
    match (&decision, &found.cache) {
        (Decision::Record { dir: None, .. }, Cache::Unavailable(why)) => Decision::Plain {
            reason: format!(
                "no record folder is named and the record cache cannot be used ({why}): COMMAND runs unchanged, recording nothing (set {} to keep a record)",
                protocol::env::RECORD_DIR
            ),
        },
        (Decision::Record { .. } | Decision::Replay { .. } | Decision::Sweep { .. }, Cache::Folder(dir)) => {
            cache_dir::touch(dir, &found.op);
            decision
        }
        _ => decision,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::backend::Environment;

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

    #[test]
    fn a_named_folder_wins_and_a_child_uses_no_cache() {
        let home = tempfile::tempdir().expect("tempdir");
        let w = world(&[("HOME", home.path().to_str().expect("utf-8"))]);
        let named = Some(PathBuf::from("/named"));
        assert_eq!(
            resolve(named.clone(), false, &w, &UNKNOWN),
            (named, Cache::NotUsed)
        );
        assert_eq!(resolve(None, true, &w, &UNKNOWN), (None, Cache::NotUsed));
        assert!(
            std::fs::read_dir(home.path())
                .expect("read")
                .next()
                .is_none(),
            "nothing made"
        );
    }

    #[test]
    fn the_cache_folder_is_made_per_platform_and_one_that_cannot_be_is_said() {
        let home = tempfile::tempdir().expect("tempdir");
        let w = world(&[("XDG_CACHE_HOME", home.path().to_str().expect("utf-8"))]);
        let platform = Platform {
            triton: Some("3.6.0".into()),
            device: Some("NVIDIA H200".into()),
        };
        let (dir, cache) = resolve(None, false, &w, &platform);
        let dir = dir.expect("the cache's folder");
        assert_eq!(cache, Cache::Folder(dir.clone()));
        assert!(dir.is_dir() && dir.starts_with(home.path().join("parallel-warmup/records")));
        assert_ne!(
            resolve(None, false, &w, &UNKNOWN).0,
            Some(dir),
            "another platform, another folder"
        );
        let (none, cache) = resolve(None, false, &world(&[]), &platform);
        assert!(
            none.is_none() && matches!(cache, Cache::Unavailable(_)),
            "{cache:?}"
        );
    }
}
