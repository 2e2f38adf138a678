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
    let var = |name: &str| world.env.get(name).map(OsString::from);
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
