//! `warmup-costs`: reads a finished run's scratch folder and writes, or updates, the cost file
//! that `warmup-shard --strategy lpt --costs FILE` balances the next run by.
//!
//! Its own tool rather than a mode of warmup-shard or warmup-merge: it runs at another point of
//! the flow (after the children, like merge, but about time rather than configs), it reads
//! what spawn wrote and feeds shard, and its inputs and output are nothing like either tool's.
//! The cost file's format is protocol's ([`protocol::costs`]), which warmup-shard reads it
//! through, and so is the reading of an op's history in a record folder
//! ([`protocol::history`]), which warmup-shard `--history` uses too. [`shape_costs`] says how a
//! shard's time is attributed to its shapes. [`history`] keeps a sweep's costs with its records
//! and finds the children's start-up, and [`prediction`] is `--predict`, which prints what the
//! model of whether a warmup pays (`protocol::predict`, warmup-plan's too) says.

pub mod history;
pub mod prediction;
pub mod shape_costs;

use anyhow::{Context, Result};
use protocol::layout::Scratch;
use protocol::shard_plan::ShardPlan;
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
      the next run, balanced by those costs
  warmup-costs --record-dir records /tmp/run
      keeps the run's costs with its records, as records/<op>.costs.json (warmup-shard --history)
  warmup-costs --predict --record-dir records --op mm --devices 0,0 --python .venv/bin/python
      predicts the warmup's wall time against the plain run's from that history: exit 0 when the
      warmup saves at least 10% (or there is no usable history), 3 when it would not";

/// This tool's exit statuses (docs/CONTRACT.md, "Exit statuses").
const EXIT_STATUS: [(&str, &str); 3] = [
        ("0", "done: the costs written; with --predict, the warmup runs (it saves 10% or more, or no history can say)"),
        toolkit::USAGE_ROW,
        ("3", "no costs to learn: no shard ran to a good end, or the run was by key; nothing written. With --predict: the warmup would not save 10%, run plain"),
    ];

/// Write or update a cost file from what a finished run measured.
#[derive(Debug, clap::Parser)]
#[command(name = TOOL, version, about, after_long_help = toolkit::cli::after_help(EXAMPLES, &toolkit::exit_status_help(&EXIT_STATUS)))]
pub struct Args {
    #[command(flatten)]
    pub op: protocol::op::OpArg,

    /// The cost file to write or update ({"<op>": {"<shape text>": seconds}}); its other ops
    /// and shapes are kept, a measured shape's cost replaced
    #[arg(long, value_name = "FILE")]
    pub costs: Option<PathBuf>,

    /// The record folder: keep the run's costs there as <op>.costs.json, replacing the op's
    /// earlier ones (the history warmup-shard --history balances by); with --predict, the
    /// history to predict from
    #[arg(long, value_name = "DIR", value_parser = toolkit::cli::folder())]
    pub record_dir: Option<PathBuf>,

    /// Predict, from the op's history in --record-dir, the warmup's wall time against the plain
    /// run's; exit 3 when the warmup would not save 10%
    #[arg(long, requires = "record_dir", conflicts_with_all = ["costs", "scratch", "startup"])]
    pub predict: bool,

    #[command(flatten)]
    pub platform: protocol::probe::PlatformArgs,

    /// Seconds of each child's wall time that are start-up (interpreter, imports, device set-up),
    /// not sweeping; subtracted before a shard's time is split over its shapes [default: the
    /// mean of the children's own figures (startup_seconds in their sidecars), else 0]
    #[arg(long, value_name = "SECS", value_parser = toolkit::cli::non_negative)]
    pub startup: Option<f64>,

    /// The finished run's scratch folder (holding plan.json and w<i>/status.json)
    #[arg(value_name = "SCRATCH", required_unless_present = "predict")]
    pub scratch: Option<PathBuf>,
}

pub fn run(args: &Args) -> Result<Status> {
    if args.predict {
        return prediction::run(args);
    }
    let Some(scratch_dir) = &args.scratch else {
        anyhow::bail!("give the SCRATCH folder of a finished run, or --predict");
    };
    if args.costs.is_none() && args.record_dir.is_none() {
        anyhow::bail!(
            "give --costs FILE or --record-dir DIR: where to write what the run measured"
        );
    }
    let scratch = Scratch::new(scratch_dir);
    if !scratch.shard_plan().is_file() {
        anyhow::bail!(
            "{}: no plan.json: give the scratch folder of a run (warmup-shard --out)",
            scratch_dir.display()
        );
    }
    // Held while the plan and the status files are read: a run rewriting this scratch
    // (warmup-shard, warmup-spawn) is refused, or refuses us, rather than read half-written.
    let _lock = scratch.lock()?;
    let (plan, scratch) = ShardPlan::load(&scratch.shard_plan())?;
    args.op.for_shard_plan(&plan, &scratch.shard_plan())?;
    if plan.by_key() {
        // Its children each ran the whole command: no shard's time belongs to any shape.
        eprintln!(
            "{TOOL}: {}: a by-key run (warmup-shard --by-key) has no shapes to learn costs of; nothing written",
            scratch.shard_plan().display()
        );
        return Ok(Status::NothingToDo);
    }
    // Read, merged and written under a lock beside the file (beside the file a symlink leads
    // to, where it is replaced): two runs updating one cost file from different scratches each
    // keep what the other wrote. `--record-dir`'s file takes its own lock when it is written.
    let _update = match &args.costs {
        Some(path) => {
            let target = target_of(path)?;
            if let Some(dir) = &args.record_dir {
                let kept = protocol::history::costs_path(dir, &plan.op);
                if target_of(&kept)? == target {
                    anyhow::bail!(
                        "--costs {} is the file --record-dir keeps the op's costs in ({}): give one of them",
                        path.display(),
                        kept.display()
                    );
                }
            }
            Some(toolkit::lock::update_lock(TOOL, &target)?)
        }
        None => None,
    };
    let mut file = args
        .costs
        .as_deref()
        .map(CostFile::load_or_new)
        .transpose()?;
    let startup = args
        .startup
        .unwrap_or_else(|| history::startup(&plan, &scratch).unwrap_or(0.0));
    let m = shape_costs::of_run(&plan, &scratch, startup)?;
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
            scratch_dir.display(),
            args.costs
                .iter()
                .chain(&args.record_dir)
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" and ")
        );
        return Ok(Status::NothingToDo);
    }
    let mut written = Vec::new();
    if let (Some(file), Some(path)) = (&mut file, &args.costs) {
        let mut new = 0;
        for (text, seconds) in &m.costs {
            new += usize::from(file.set(&plan.op, text, *seconds));
        }
        file.save()
            .with_context(|| format!("writing cost file {}", path.display()))?;
        eprintln!(
            "{TOOL}: op {}: {} shape cost(s) into {} ({new} new), {} measured alone, {} split from shards of several",
            plan.op,
            m.costs.len(),
            path.display(),
            m.alone,
            m.attributed
        );
        written.push(path.clone());
    }
    if let Some(dir) = &args.record_dir {
        let path = history::keep(dir, &plan.op, &m.costs)?;
        eprintln!(
            "{TOOL}: op {}: {} shape cost(s) kept with the records in {} (start-up {startup:.2} s a child)",
            plan.op,
            m.costs.len(),
            path.display()
        );
        written.push(path);
    }
    let mut out = std::io::stdout().lock();
    for path in written {
        writeln!(out, "{}", path.display()).context("writing to stdout")?;
    }
    out.flush().context("writing to stdout")?;
    Ok(Status::Done)
}
