//! The second phase: `warmup-merge --in-scratch SCRATCH --summary -`, its summary read back by
//! the type it was written with.

use super::rest::{Rest, ToolEnd};
use super::Place;
use crate::measure::judgment::Merged;
use protocol::summary::MergeSummary;
use std::ffi::OsStr;

/// Merges the shards' records into `SCRATCH/merged.json`: how it went, as the judgment reads it.
pub fn merge(rest: &mut Rest<'_>, place: &Place<'_>) -> Merged {
    let args = [
        OsStr::new("--in-scratch"),
        place.scratch.root().as_os_str(),
        OsStr::new("--summary"),
        OsStr::new("-"),
    ];
    match rest.tool("warmup-merge", &args, place.lock.as_ref()) {
        ToolEnd::Done(out) => MergeSummary::read(&out).map_or(Merged::Failed, Merged::Configs),
        ToolEnd::Failed(Some((3, out))) => Merged::Nothing(MergeSummary::read(&out)),
        ToolEnd::Failed(_) => Merged::Failed,
    }
}
