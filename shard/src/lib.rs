//! `warmup-shard`: splits one op's shapes in a PyYAML shape file into per-shard shape files under
//! a scratch folder (round-robin, or balanced by expected costs: `strategy`), and writes the plan
//! the other tools read.

mod by_key;
mod commit;
mod listing;
mod robust;
mod shape;
mod shape_file;
mod split;
mod strategy;

use anyhow::{Context, Result};
use protocol::layout::{shapes_in_scratch, Scratch};
use protocol::shard_plan::{Shard, ShardPlan, VERSION};
use std::path::PathBuf;
use toolkit::Status;

pub use split::{split, Piece, Split};
pub use strategy::{Balance, Model, Strategy};

pub const TOOL: &str = "warmup-shard";

const EXAMPLES: &str = "EXAMPLES:
  warmup-shard --op mm --shards 4 --out /tmp/run core_shapes.yaml
      writes /tmp/run/w0/shapes.yaml .. w3/shapes.yaml and /tmp/run/plan.json
  warmup-shard --op mm --entry BlasBenchmark --shards 2 --out /tmp/run core_shapes.yaml
      FlagGems keeps mm's shapes under its benchmark class name; each shard keeps that key
  FLAGGEMS_PERF_CURRENT_OP=addmm warmup-shard --shards 8 --out \"$SCRATCH\" shapes.yaml | xargs wc -l
  warmup-shard --op mm --shards 8 --strategy lpt --costs costs.json --out /tmp/run shapes.yaml
      balanced by the seconds a previous run measured (warmup-costs writes costs.json)
  warmup-shard --op mm --shards 4 --history records --python .venv/bin/python --out /tmp/run shapes.yaml
      LPT by the costs the last sweep kept in records/ (warmup-costs --record-dir), when it ran
      on this Triton and GPU model; else the robust split
  warmup-shard --op mm --shards 1000 --strategy lpt --out /tmp/run shapes.yaml
      one shape per shard, largest product first: warmup-spawn runs them as a pool
  warmup-shard --by-key --shards 8 --out /tmp/run
      no shape file: 8 children each run the whole command and claim autotune keys";

/// This tool's exit statuses (docs/CONTRACT.md, "Exit statuses").
const EXIT_STATUS: [(&str, &str); 3] = [
    (
        "0",
        "done: the plan and the shard files are written (their paths on stdout)",
    ),
    toolkit::USAGE_ROW,
    (
        "3",
        "nothing to do: fewer than 2 shards would result; nothing written",
    ),
];

/// Split an op's shapes in a shape file into shard files a child reads with `yaml.safe_load`
/// into exactly the objects the source gives; round-robin, or balanced by expected costs.
#[derive(Debug, clap::Parser)]
#[command(name = TOOL, version, after_long_help = toolkit::cli::after_help(EXAMPLES, &toolkit::exit_status_help(&EXIT_STATUS)))]
pub struct Args {
    #[command(flatten)]
    pub op: protocol::op::OpArg,
    /// The top-level key whose "shapes" to split, kept as the key in every shard file: where the
    /// benchmark looks the op's shapes up (FlagGems: its benchmark class name) [default: the op]
    #[arg(long, value_name = "KEY")]
    pub entry: Option<String>,
    /// How many shards to make at most (fewer when the op has fewer shapes); more shards than
    /// devices make warmup-spawn run them as a pool, longest expected first
    #[arg(long, value_parser = toolkit::cli::at_least_one, allow_negative_numbers = true)]
    pub shards: u64,
    /// How to assign shapes to shards [default: lpt with --history, else round-robin]
    #[arg(long, value_enum)]
    pub strategy: Option<Strategy>,
    /// A cost file of measured seconds per shape (warmup-costs writes it); shapes it lacks get
    /// the median of the op's shapes it has
    #[arg(long, value_name = "FILE")]
    pub costs: Option<PathBuf>,
    /// A record folder: balance by the costs the op's last sweep kept there (<op>.costs.json,
    /// `warmup-costs --record-dir`) when its <op>.meta.json names this run's Triton version and
    /// device model, else by the cost model
    #[arg(long, value_name = "DIR", conflicts_with = "costs")]
    pub history: Option<PathBuf>,
    #[command(flatten)]
    pub platform: protocol::probe::PlatformArgs,
    /// The cost model where there is no cost file, or it has none of the op's shapes
    /// [default: robust, with --strategy lpt or --costs]
    #[arg(long, value_enum, value_name = "MODEL")]
    pub cost_model: Option<Model>,
    /// Under --cost-model product: each shape's fixed cost, in units of the op's mean product
    /// (a shape of mean product costs 1 + this)
    #[arg(long, value_name = "MEANS", default_value = "1", value_parser = protocol::costs::cost_arg)]
    pub overhead: f64,
    /// The scratch folder: gets w<i>/shapes.yaml per shard and plan.json (created if missing)
    #[arg(long, value_name = "SCRATCH")]
    pub out: PathBuf,
    /// Split and print the shard files a run would write, one per line; write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// No shape file and no split: a plan of N shards whose children each run the whole command
    /// and claim each autotune key in SCRATCH/claims (the first child to meet a key tunes it);
    /// there are no shapes, so no costs and no history either
    #[arg(long, conflicts_with_all = ["entry", "strategy", "costs", "history", "cost_model", "dry_run", "shape_file"])]
    pub by_key: bool,
    /// The shape file (YAML read by PyYAML's safe_load)
    #[arg(value_name = "SHAPE_FILE", required_unless_present = "by_key")]
    pub shape_file: Option<PathBuf>,
}

pub fn run(args: &Args) -> Result<Status> {
    let op = args.op.name().to_owned();
    let Some(path) = args.shape_file.as_ref().filter(|_| !args.by_key) else {
        return by_key::run(&op, args.shards, &args.out);
    };
    let strategy = args.strategy.unwrap_or(if args.history.is_some() {
        Strategy::Lpt
    } else {
        Strategy::RoundRobin
    });
    let file = match (&args.costs, &args.history) {
        (Some(path), _) => Some(protocol::costs::CostFile::load(path)?),
        (None, Some(dir)) => from_history(dir, &op, args),
        (None, None) => None,
    };
    let balance = Balance {
        strategy,
        costs: file,
        model: args.cost_model,
        overhead: args.overhead,
    };
    let name = path.display().to_string();
    if path.is_dir() {
        anyhow::bail!("{name}: is a directory: give the shape file (a YAML file)");
    }
    let bytes = toolkit::file::read(path)
        .with_context(|| format!("reading shape file {name} (check the path)"))?;
    let source =
        std::fs::canonicalize(path).with_context(|| format!("resolving the path of {name}"))?;
    let shards = usize::try_from(args.shards).unwrap_or(usize::MAX);
    let entry = args.entry.as_deref();
    let cut = split(
        &bytes,
        &name,
        &source.display().to_string(),
        &op,
        entry,
        shards,
        &balance,
    )?;
    if cut.pieces.len() < 2 {
        eprintln!(
            "{TOOL}: op {op:?} has {} shape(s) in {name} and --shards is {}: fewer than 2 shards would result, nothing to do",
            cut.total, args.shards
        );
        return Ok(Status::NothingToDo);
    }
    let plan = ShardPlan {
        version: VERSION,
        op: op.clone(),
        entry: Some(entry.unwrap_or(&op).to_owned()),
        mode: None,
        source,
        strategy: strategy.name().to_owned(),
        cost_source: cut.costs.as_ref().map(|c| c.source.to_owned()),
        shapes: cut.total,
        shards: cut
            .pieces
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let costs: Option<Vec<f64>> = cut
                    .costs
                    .as_ref()
                    .map(|c| p.shapes.iter().map(|&j| c.per_shape[j]).collect());
                Shard {
                    index: i,
                    shape_file: shapes_in_scratch(i),
                    shapes: p.shapes.clone(),
                    shape_texts: Some(
                        p.shapes
                            .iter()
                            .map(|&j| cut.shapes[j].text.clone())
                            .collect(),
                    ),
                    expected_cost: costs.as_ref().map(|c| c.iter().sum()),
                    shape_costs: costs,
                }
            })
            .collect(),
    };
    let scratch = Scratch::new(&args.out);
    if args.dry_run {
        listing::print(&scratch, cut.pieces.len())?;
        return Ok(Status::Done);
    }
    let texts: Vec<&str> = cut.pieces.iter().map(|p| p.text.as_str()).collect();
    let replaced = commit::replace(&scratch, &texts, &plan)?;
    report_replaced(&replaced, &args.out);
    let sizes: Vec<String> = cut
        .pieces
        .iter()
        .map(|p| p.shapes.len().to_string())
        .collect();
    eprintln!(
        "{TOOL}: op {op}: {} shapes into {} shards of {} in {} ({})",
        cut.total,
        sizes.len(),
        sizes.join(", "),
        args.out.display(),
        strategy.name()
    );
    if let Some(line) = expected_line(&plan) {
        eprintln!("{TOOL}: {line}");
    }
    listing::print(&scratch, cut.pieces.len())?;
    Ok(Status::Done)
}

/// Says what replacing an earlier run's plan changed.
fn report_replaced(replaced: &commit::Replaced, out: &std::path::Path) {
    if replaced.plan {
        eprintln!(
            "{TOOL}: replaced the plan in {} from an earlier run",
            out.display()
        );
    }
    for path in &replaced.removed {
        eprintln!("{TOOL}: removed {} left by the earlier run", path.display());
    }
}

/// The costs of the op's last sweep kept in the record folder `dir`, when that sweep ran on this
/// run's Triton and device model; else `None`, after a line saying why.
fn from_history(dir: &std::path::Path, op: &str, args: &Args) -> Option<protocol::costs::CostFile> {
    match protocol::history::find(dir, op, || args.platform.find()) {
        Ok(history) => {
            eprintln!(
                "{TOOL}: op {op}: balancing by the costs its last sweep measured ({})",
                history.costs.path().display()
            );
            Some(history.costs)
        }
        Err(why) => {
            let model = args.cost_model.unwrap_or(Model::Robust).name();
            eprintln!("{TOOL}: op {op}: no usable history ({why}): splitting by the {model} model");
            None
        }
    }
}

/// `expected cost per shard (file): 12.100 s (largest) to 11.800 s, mean 11.900 s`, for a plan
/// with costs (model units have no `s`).
fn expected_line(plan: &ShardPlan) -> Option<String> {
    let source = plan.cost_source.as_deref()?;
    let loads: Vec<f64> = plan.shards.iter().filter_map(|s| s.expected_cost).collect();
    let max = loads.iter().copied().fold(0.0, f64::max);
    let min = loads.iter().copied().fold(f64::INFINITY, f64::min);
    let unit = if source == "file" { " s" } else { "" };
    Some(format!(
        "expected cost per shard ({source}): {max:.3}{unit} (largest) to {min:.3}{unit}, mean {:.3}{unit}",
        loads.iter().sum::<f64>() / loads.len().max(1) as f64
    ))
}
