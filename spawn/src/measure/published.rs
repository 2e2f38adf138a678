//! The third phase: `warmup-publish --format json` into the record folder (else
//! `SCRATCH/merged`, also where publishing into the record folder failed), where it went read
//! back by the type it was written with; then
//! `warmup-costs`, the sweep's costs kept with the records for the next run's split. A stopped
//! sweep publishes too, with a record folder, for the next run to resume from.

use super::judgment::Merged;
use super::merged;
use super::place::Place;
use super::rest::{Rest, ToolEnd};
use super::say::say;
use protocol::replay::ReplayEnv;
use protocol::shard_plan::ShardPlan;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Where the configs went.
#[derive(Debug)]
pub struct Published {
    pub merged: Merged,
    /// Where warmup-publish published (`None`: it failed, or did not run).
    pub dir: Option<PathBuf>,
}

impl Published {
    /// Publishes what was merged, unless nothing was or a stop came; `complete`: the run's
    /// signature, when the sweep left nothing missing, for the sidecar's `complete_for`.
    pub fn run(
        rest: &mut Rest<'_>,
        merged: Merged,
        place: &Place<'_>,
        complete: Option<&str>,
    ) -> Published {
        let mut dir = None;
        if matches!(merged, Merged::Configs(_)) && rest.stopped().is_none() {
            dir = match publish(rest, &place.publish_dir, place, complete) {
                ToolEnd::Done(out) => ReplayEnv::replay_dir(&out),
                ToolEnd::Failed(_) => into_scratch(rest, place, complete),
            };
        }
        Published { merged, dir }
    }

    /// `warmup-costs --op OP --record-dir DIR SCRATCH`, where the configs went to the record
    /// folder and the plan is not by key: its exit 3 is silent, any other failure a warning, and
    /// neither stops the measurement.
    pub fn keep_costs(&self, rest: &mut Rest<'_>, place: &Place<'_>, plan: &ShardPlan) {
        let (Some(dir), Some(to)) = (&place.record_dir, &self.dir) else {
            return;
        };
        if dir != to || plan.by_key() {
            return;
        }
        let args = [
            OsStr::new("--op"),
            OsStr::new(place.op),
            OsStr::new("--record-dir"),
            dir.as_os_str(),
            OsStr::new("--"),
            place.scratch.root().as_os_str(),
        ];
        match rest.tool("warmup-costs", &args, place.lock.as_ref()) {
            ToolEnd::Done(_) | ToolEnd::Failed(Some((3, _))) => {}
            ToolEnd::Failed(_) => say(&format!(
                "WARNING the sweep's costs could not be kept in {} (see above); the next run splits by the cost model",
                dir.display()
            )),
        }
    }
}

/// A stopped sweep's records, merged and published into the record folder for the next run to
/// resume from; nothing without a record folder.
pub fn after_stop(rest: &mut Rest<'_>, place: &Place<'_>) -> Published {
    let mut published = Published {
        merged: Merged::Failed(None),
        dir: None,
    };
    let Some(dir) = &place.record_dir else {
        return published;
    };
    let merged = matches!(merged::merge(rest, place), Merged::Configs(_));
    if merged && matches!(publish(rest, dir, place, None), ToolEnd::Done(_)) {
        say(&format!(
            "the sweep was stopped: what its children recorded is published in {}; the next run resumes from it (--fresh: tunes every key again)",
            dir.display()
        ));
        published.dir = Some(dir.clone());
    } else {
        say("the sweep was stopped before any child recorded a key; nothing to resume from");
    }
    published
}

/// Where publishing into the record folder failed (a full disk, a folder that turned read-only):
/// the configs published into `SCRATCH/merged` instead, so that the measurement replays the
/// sweep rather than tuning every key again; said once. `None` where that fails too, where
/// there is no record folder (the scratch was the target) or a stop came.
fn into_scratch(rest: &mut Rest<'_>, place: &Place<'_>, complete: Option<&str>) -> Option<PathBuf> {
    let record_dir = place.record_dir.as_ref()?;
    if rest.stopped().is_some() {
        return None;
    }
    let fallback = place.scratch.fallback_records();
    let ToolEnd::Done(out) = publish(rest, &fallback, place, complete) else {
        return None;
    };
    say(&format!(
        "WARNING publishing into the record folder {} failed (warmup-publish's error above): the \
         measurement replays the sweep's configs from {}; the record there may lack them: fix \
         that folder (its space, its permissions) before the next run",
        record_dir.display(),
        fallback.display()
    ));
    ReplayEnv::replay_dir(&out)
}

/// `warmup-publish --op OP --format json --record-dir DIR [--signature SIG] -- SCRATCH`.
pub fn publish(
    rest: &mut Rest<'_>,
    dir: &Path,
    place: &Place<'_>,
    complete: Option<&str>,
) -> ToolEnd {
    let mut args = vec![
        OsStr::new("--op"),
        OsStr::new(place.op),
        OsStr::new("--format"),
        OsStr::new("json"),
        OsStr::new("--record-dir"),
        dir.as_os_str(),
    ];
    if let Some(sig) = complete {
        args.extend([OsStr::new("--signature"), OsStr::new(sig)]);
    }
    args.extend([OsStr::new("--"), place.scratch.root().as_os_str()]);
    rest.tool("warmup-publish", &args, place.lock.as_ref())
}
