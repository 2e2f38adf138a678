//! `warmup-costs`: reads a finished run's scratch folder and writes, or updates, the cost file
//! that `warmup-shard --strategy lpt --costs FILE` balances the next run by.
//!
//! Its own tool rather than a mode of warmup-shard or warmup-merge: it runs at another point of
//! the flow (after the children, like merge, but about time rather than configs), it reads
//! what spawn wrote and feeds shard, and its inputs and output are nothing like either tool's.
//! The cost file's format is protocol's ([`protocol::costs`]), which warmup-shard reads it
//! through. [`measure`] says how a shard's time is attributed to its shapes.

pub mod measure;

use anyhow::{Context, Result};
use protocol::layout::Scratch;
use protocol::plan::Plan;
use std::io::Write;
use std::path::PathBuf;
use toolkit::Status;

use protocol::costs::{target_of, CostFile, MAX_SECONDS};

pub const TOOL: &str = "warmup-costs";

const EXAMPLES: &str = "EXAMPLES:
  warmup-costs --costs costs.json /tmp/run
      adds what the run in /tmp/run measured of each shape to costs.json (created if missing)
  warmup-costs --costs costs.json --startup 8 /tmp/run
      the same, counting 8 s of every child's wall time as start-up (imports), not sweeping
  warmup-shard --op mm --shards 32 --strategy lpt --costs costs.json --out /tmp/next shapes.yaml
      the next run, balanced by those costs";

/// Write or update a cost file from what a finished run measured.
#[derive(Debug, clap::Parser)]
#[command(name = TOOL, version, about, after_long_help = toolkit::cli::after_help(EXAMPLES))]
pub struct Args {
    #[command(flatten)]
    pub op: protocol::op::OpArg,

    /// The cost file to write or update ({"<op>": {"<shape text>": seconds}}); its other ops
    /// and shapes are kept, a measured shape's cost replaced
    #[arg(long, value_name = "FILE")]
    pub costs: PathBuf,

    /// Seconds of each child's wall time that are start-up (interpreter, imports, device set-up),
    /// not sweeping; subtracted before a shard's time is split over its shapes
    #[arg(long, value_name = "SECS", default_value = "0", value_parser = toolkit::cli::non_negative)]
    pub startup: f64,

    /// The finished run's scratch folder (holding plan.json and w<i>/status.json)
    #[arg(value_name = "SCRATCH")]
    pub scratch: PathBuf,
}

pub fn run(args: &Args) -> Result<Status> {
    let scratch = Scratch::new(&args.scratch);
    if !scratch.plan().is_file() {
        anyhow::bail!(
            "{}: no plan.json: give the scratch folder of a run (warmup-shard --out)",
            args.scratch.display()
        );
    }
    // Held while the plan and the status files are read: a run rewriting this scratch
    // (warmup-shard, warmup-spawn) is refused, or refuses us, rather than read half-written.
    let _lock = scratch.lock()?;
    let (plan, scratch) = Plan::load(&scratch.plan())?;
    args.op.for_plan(&plan, &scratch.plan())?;
    // Read, merged and written under a lock beside the file (beside the file a symlink leads
    // to, where it is replaced): two runs updating one cost file from different scratches each
    // keep what the other wrote.
    let _update = toolkit::lock::update_lock(TOOL, &target_of(&args.costs)?)?;
    let mut file = CostFile::load_or_new(&args.costs)?;
    let m = measure::measure(&plan, &scratch, args.startup)?;
    for why in &m.skipped {
        eprintln!("{TOOL}: {why}: its shapes keep the costs they had");
    }
    for what in &m.saturated {
        eprintln!("{TOOL}: {what}, more than a cost file holds: counted as {MAX_SECONDS:e} s");
    }
    if m.without_text > 0 {
        eprintln!(
            "{TOOL}: {} shape(s) hold values JSON cannot hold (dates, bytes, sets): a cost file cannot name them",
            m.without_text
        );
    }
    if m.costs.is_empty() {
        eprintln!(
            "{TOOL}: no shard of {} ran to a good end: nothing to learn, {} left as it was",
            args.scratch.display(),
            args.costs.display()
        );
        return Ok(Status::NothingToDo);
    }
    let mut new = 0;
    for (text, seconds) in &m.costs {
        new += usize::from(file.set(&plan.op, text, *seconds));
    }
    file.save()
        .with_context(|| format!("writing cost file {}", args.costs.display()))?;
    eprintln!(
        "{TOOL}: op {}: {} shape cost(s) into {} ({new} new), {} measured alone, {} split from shards of several",
        plan.op,
        m.costs.len(),
        args.costs.display(),
        m.alone,
        m.attributed
    );
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", args.costs.display())
        .and_then(|()| out.flush())
        .context("writing to stdout")?;
    Ok(Status::Done)
}
