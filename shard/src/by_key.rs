//! `warmup-shard --by-key`: a plan of k shards without shape files, for children that each run
//! COMMAND whole and share its sweep key by key through the scratch's claim folder
//! (docs/CONTRACT.md, "By-key mode"). Nothing is read and nothing is split: a benchmark with no
//! shape file, one that adds shapes of its own, or a run over several ops is warmed up the same
//! way.

use crate::commit;
use anyhow::{Context, Result};
use protocol::layout::Scratch;
use protocol::shard_plan::ShardPlan;
use std::io::Write;
use toolkit::Status;

/// The most children a by-key plan has (one per device).
const MAX_SHARDS: u64 = 4096;

/// Writes the by-key plan of `shards` shards for `op` into `out`, and prints the shard folders.
pub fn run(op: &str, shards: u64, out: &std::path::Path) -> Result<Status> {
    if shards < 2 {
        eprintln!(
            "{}: --by-key --shards {shards}: fewer than 2 children would share the sweep, nothing to do",
            crate::flags::TOOL
        );
        return Ok(Status::NothingToDo);
    }
    // One child per device: a count past any machine's devices is a typo, refused before a plan
    // of that many shards is built in memory.
    if shards > MAX_SHARDS {
        anyhow::bail!(
            "--by-key --shards {shards}: a by-key run has one child per device, at most {MAX_SHARDS}"
        );
    }
    let k = usize::try_from(shards).context("--shards")?;
    let plan = ShardPlan::new_by_key(op, k);
    let scratch = Scratch::new(out);
    commit::replace_shard_plan(&scratch, &[], &plan)?.report(out);
    eprintln!(
        "{}: op {op}: {k} by-key shards in {}: each child runs the whole command and claims the keys it meets first",
        crate::flags::TOOL,
        out.display()
    );
    let mut stdout = std::io::stdout().lock();
    for i in 0..k {
        writeln!(stdout, "{}", scratch.worker(i).display()).context("writing to stdout")?;
    }
    stdout.flush().context("writing to stdout")?;
    Ok(Status::Done)
}
