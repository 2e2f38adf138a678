//! By-key mode (a plan warmup-shard wrote with `--by-key`; docs/CONTRACT.md, "By-key mode"): every
//! child runs COMMAND whole, its argv untouched, and claims autotune keys in `SCRATCH/claims`.
//!
//! One child per device: a child's own benchmark loop uses its GPU between tunings, and a second
//! child on that GPU would time its configs beside it, so a device listed twice is refused, and
//! so is a plan of more shards than devices (the later children would only find every key taken).

use anyhow::{bail, Context, Result};
use protocol::layout::Scratch;
use protocol::shard_plan::ShardPlan;
use std::path::Path;

/// Refuses devices that would put two by-key children on one device at once.
pub fn check_devices(plan: &ShardPlan, plan_path: &Path, devices: &[String]) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    if let Some(twice) = devices.iter().find(|d| !seen.insert(d.as_str())) {
        bail!(
            "device {twice} is listed twice: a by-key plan ({}) runs one child per device, because a \
             child's own benchmark runs on its device between tunings and would disturb another's \
             timing there; list each device once",
            plan_path.display()
        );
    }
    if plan.shards.len() > devices.len() {
        bail!(
            "{}: a by-key plan of {} shards needs as many devices, {} listed: each child runs the \
             whole command, so a child started after another ended would find every key taken; \
             list more devices, or re-plan with warmup-shard --by-key --shards N, N at most {}",
            plan_path.display(),
            plan.shards.len(),
            devices.len(),
            devices.len()
        );
    }
    Ok(())
}

/// Readies `SCRATCH/claims` before any child starts: emptied for a run of the whole plan (its
/// claims and winners were the earlier run's, whose records are cleared too), kept for a run of
/// some shards (the tasks of one Slurm array share it while they run).
pub fn ready_claims(scratch: &Scratch, whole: bool) -> Result<()> {
    let claims = scratch.claims();
    if whole {
        match std::fs::remove_dir_all(&claims) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| {
                    format!("removing the earlier run's claims in {}", claims.display())
                })
            }
            _ => {}
        }
    }
    std::fs::create_dir_all(&claims)
        .with_context(|| format!("creating the claim folder {}", claims.display()))
}
