//! The second phase: `warmup-merge --op OP --in-scratch SCRATCH --summary -`, its summary read
//! back by the type it was written with; `--measure` and `--finish` alike.

use super::judgment::Merged;
use super::place::Place;
use super::rest::{Rest, ToolEnd};
use protocol::summary::MergeSummary;
use std::ffi::OsStr;

/// Merges the shards' records into `SCRATCH/merged.json`: how it went, as the judgment reads it.
pub fn merge(rest: &mut Rest<'_>, place: &Place<'_>) -> Merged {
    let args = [
        OsStr::new("--op"),
        OsStr::new(place.op),
        OsStr::new("--in-scratch"),
        place.scratch.root().as_os_str(),
        OsStr::new("--summary"),
        OsStr::new("-"),
    ];
    match rest.tool("warmup-merge", &args, place.lock.as_ref()) {
        ToolEnd::Done(out) => {
            MergeSummary::read(&out).map_or(Merged::Failed(None), Merged::Configs)
        }
        ToolEnd::Failed(Some((3, out))) => Merged::Nothing(MergeSummary::read(&out)),
        ToolEnd::Failed(end) => Merged::Failed(end.map(|(code, _)| code)),
    }
}
