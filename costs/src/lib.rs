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
use protocol::lock::ScratchLock;
use protocol::shard_plan::ShardPlan;
use std::io::Write;
use std::path::{Path, PathBuf};
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

/// The run as steps that hand each other typed values: the finished run opened
/// ([`FinishedRun`]), the cost file locked and read, what the run measured ([`Measured`]), the
/// costs written ([`write`]), and the files written printed.
pub fn run(args: &Args) -> Result<Status> {
    if args.predict {
        return prediction::run(args);
    }
    let Some(finished) = FinishedRun::open(args)? else {
        return Ok(Status::NothingToDo);
    };
    // Read, merged and written under a lock beside the file (beside the file a symlink leads
    // to, where it is replaced): two runs updating one cost file from different scratches each
    // keep what the other wrote. `--record-dir`'s file takes its own lock when it is written.
    let _update = args
        .costs
        .as_deref()
        .map(|path| {
            cost_file_target(args, path, &finished.plan.op)
                .and_then(|target| toolkit::lock::update_lock(TOOL, &target))
        })
        .transpose()?;
    let mut file = args
        .costs
        .as_deref()
        .map(CostFile::load_or_new)
        .transpose()?;
    let Some(measured) = Measured::of(args, &finished)? else {
        return Ok(Status::NothingToDo);
    };
    let written = write(args, &finished.plan.op, file.as_mut(), &measured)?;
    let mut out = std::io::stdout().lock();
    for path in written {
        writeln!(out, "{}", path.display()).context("writing to stdout")?;
    }
    out.flush().context("writing to stdout")?;
    Ok(Status::Done)
}

/// A finished run's scratch folder, locked, and its plan.
struct FinishedRun<'a> {
    /// SCRATCH as given.
    given: &'a Path,
    plan: ShardPlan,
    scratch: Scratch,
    /// Held while the plan and the status files are read: a run rewriting this scratch
    /// (warmup-shard, warmup-spawn) is refused, or refuses us, rather than read half-written.
    _lock: ScratchLock,
}

impl<'a> FinishedRun<'a> {
    /// Checks that the command line names a run and where its costs go, then opens the run;
    /// None, said, for a by-key run, which has no costs to learn.
    fn open(args: &'a Args) -> Result<Option<FinishedRun<'a>>> {
        let Some(given) = &args.scratch else {
            anyhow::bail!("give the SCRATCH folder of a finished run, or --predict");
        };
        if args.costs.is_none() && args.record_dir.is_none() {
            anyhow::bail!(
                "give --costs FILE or --record-dir DIR: where to write what the run measured"
            );
        }
        let scratch = Scratch::new(given);
        if !scratch.shard_plan().is_file() {
            anyhow::bail!(
                "{}: no plan.json: give the scratch folder of a run (warmup-shard --out)",
                given.display()
            );
        }
        let lock = scratch.lock(crate::TOOL)?;
        let (plan, scratch) = ShardPlan::load(&scratch.shard_plan())?;
        args.op.for_shard_plan(&plan, &scratch.shard_plan())?;
        if plan.by_key() {
            // Its children each ran the whole command: no shard's time belongs to any shape.
            eprintln!(
                "{TOOL}: {}: a by-key run (warmup-shard --by-key) has no shapes to learn costs of; nothing written",
                scratch.shard_plan().display()
            );
            return Ok(None);
        }
        Ok(Some(FinishedRun {
            given,
            plan,
            scratch,
            _lock: lock,
        }))
    }
}

/// The file `--costs` `path` is updated through (where a symlink leads), refused where it is
/// the one `--record-dir` keeps `op`'s costs in.
fn cost_file_target(args: &Args, path: &Path, op: &str) -> Result<PathBuf> {
    let target = target_of(path)?;
    if let Some(dir) = &args.record_dir {
        let kept = protocol::history::costs_path(dir, op);
        if target_of(&kept)? == target {
            anyhow::bail!(
                "--costs {} is the file --record-dir keeps the op's costs in ({}): give one of them",
                path.display(),
                kept.display()
            );
        }
    }
    Ok(target)
}

/// What the run measured of each shape, less the start-up of each child.
struct Measured {
    /// The seconds of each child's wall time taken as start-up.
    startup: f64,
    shapes: shape_costs::ShapeCosts,
}

impl Measured {
    /// The shapes' costs, with a line for what could not be measured; None, said, where no shard
    /// ran to a good end.
    fn of(args: &Args, finished: &FinishedRun<'_>) -> Result<Option<Measured>> {
        let (plan, scratch) = (&finished.plan, &finished.scratch);
        let startup = args
            .startup
            .unwrap_or_else(|| history::startup(plan, scratch).unwrap_or(0.0));
        let m = shape_costs::of_run(plan, scratch, startup)?;
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
                finished.given.display(),
                args.costs
                    .iter()
                    .chain(&args.record_dir)
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" and ")
            );
            return Ok(None);
        }
        Ok(Some(Measured { startup, shapes: m }))
    }
}

/// Sets `op`'s measured costs in the `--costs` `file` and keeps them in `--record-dir`, each
/// said; the files written, in that order.
fn write(
    args: &Args,
    op: &str,
    file: Option<&mut CostFile>,
    measured: &Measured,
) -> Result<Vec<PathBuf>> {
    let m = &measured.shapes;
    let mut written = Vec::new();
    if let (Some(file), Some(path)) = (file, &args.costs) {
        let mut new = 0;
        for (text, seconds) in &m.costs {
            new += usize::from(file.set(op, text, *seconds));
        }
        file.save()
            .with_context(|| format!("writing cost file {}", path.display()))?;
        eprintln!(
            "{TOOL}: op {op}: {} shape cost(s) into {} ({new} new), {} measured alone, {} split from shards of several",
            m.costs.len(),
            path.display(),
            m.alone,
            m.attributed
        );
        written.push(path.clone());
    }
    if let Some(dir) = &args.record_dir {
        let path = history::keep(dir, op, &m.costs)?;
        eprintln!(
            "{TOOL}: op {op}: {} shape cost(s) kept with the records in {} (start-up {:.2} s a child)",
            m.costs.len(),
            path.display(),
            measured.startup
        );
        written.push(path);
    }
    Ok(written)
}
