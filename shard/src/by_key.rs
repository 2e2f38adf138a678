//! `warmup-shard --by-key`: a plan of k shards without shape files, for children that each run
//! COMMAND whole and share its sweep key by key through the scratch's claim folder
//! (docs/CONTRACT.md, "By-key mode"). Nothing is read and nothing is split: a benchmark with no
//! shape file, one that adds shapes of its own, or a run over several ops is warmed up the same
//! way.

use crate::commit;
use anyhow::{Context, Result};
use protocol::layout::Scratch;
use protocol::plan::{Mode, Plan, Shard, VERSION};
use std::io::Write;
use std::path::PathBuf;
use toolkit::Status;

/// The plan's `strategy` in by-key mode: there is no split, children claim keys as they meet them.
pub const STRATEGY: &str = "by-key";

/// Writes the by-key plan of `shards` shards for `op` into `out`, and prints the shard folders.
pub fn run(op: &str, shards: u64, out: &std::path::Path) -> Result<Status> {
    if shards < 2 {
        eprintln!(
            "{}: --by-key --shards {shards}: fewer than 2 children would share the sweep, nothing to do",
            crate::TOOL
        );
        return Ok(Status::NothingToDo);
    }
    let k = usize::try_from(shards).unwrap_or(usize::MAX);
    let plan = Plan {
        version: VERSION,
        op: op.to_owned(),
        entry: None,
        mode: Some(Mode::ByKey),
        source: PathBuf::new(),
        strategy: STRATEGY.to_owned(),
        cost_source: None,
        shapes: 0,
        shards: (0..k)
            .map(|index| Shard {
                index,
                shape_file: PathBuf::new(),
                shapes: Vec::new(),
                shape_texts: None,
                shape_costs: None,
                expected_cost: None,
            })
            .collect(),
    };
    let scratch = Scratch::new(out);
    let replaced = commit::replace_plan(&scratch, &[], &plan)?;
    crate::report_replaced(&replaced, out);
    eprintln!(
        "{}: op {op}: {k} by-key shards in {}: each child runs the whole command and claims the keys it meets first",
        crate::TOOL,
        out.display()
    );
    let mut stdout = std::io::stdout().lock();
    for i in 0..k {
        writeln!(stdout, "{}", scratch.worker(i).display()).context("writing to stdout")?;
    }
    stdout.flush().context("writing to stdout")?;
    Ok(Status::Done)
}
