//! warmup-shard's command line: its name, [`Args`] and the choices it offers ([`Strategy`],
//! [`Model`]), the examples and EXIT STATUS `--help` shows. A leaf: no module of this crate is
//! named here.

use std::path::PathBuf;

/// The name every line of this tool's starts with.
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

/// How shapes are assigned to shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Strategy {
    /// Shape j to shard j mod k, as the plugin did
    RoundRobin,
    /// Largest expected cost first, onto the shard with the least expected cost so far
    Lpt,
}

impl Strategy {
    pub fn name(self) -> &'static str {
        match self {
            Strategy::RoundRobin => "round-robin",
            Strategy::Lpt => "lpt",
        }
    }
}

/// What a shape is expected to cost when no cost file says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Model {
    /// Every shape costs 1
    Uniform,
    /// The product of the numbers in the shape, relative to the op's mean, plus --overhead
    Product,
    /// Cost grows with the shape's product by an unknown power: the split whose worst case over
    /// the powers 0 to 1.5 is best
    Robust,
}

impl Model {
    pub fn name(self) -> &'static str {
        match self {
            Model::Uniform => "uniform",
            Model::Product => "product",
            Model::Robust => "robust",
        }
    }
}
