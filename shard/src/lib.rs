//! `warmup-shard`: splits one op's shapes in a PyYAML shape file round-robin into per-shard shape
//! files under a scratch folder, and writes the plan the other tools read.

mod commit;
mod emit;
mod parse;
mod resolve;
mod scan;
mod schema;
mod split;
mod tree;

use anyhow::{Context, Result};
use protocol::layout::{shapes_in_scratch, Scratch};
use protocol::plan::{Plan, Shard, VERSION};
use protocol::Status;
use std::io::Write;
use std::path::PathBuf;

pub use split::{split, Piece, Split};

pub const TOOL: &str = "warmup-shard";

const EXAMPLES: &str = "EXAMPLES:
  warmup-shard --op mm --shards 4 --out /tmp/run core_shapes.yaml
      writes /tmp/run/w0/shapes.yaml .. w3/shapes.yaml and /tmp/run/plan.json
  warmup-shard --op mm --entry BlasBenchmark --shards 2 --out /tmp/run core_shapes.yaml
      FlagGems keeps mm's shapes under its benchmark class name; each shard keeps that key
  FLAGGEMS_PERF_CURRENT_OP=addmm warmup-shard --shards 8 --out \"$SCRATCH\" shapes.yaml | xargs wc -l";

/// Split an op's shapes in a shape file round-robin into shard files a child reads with
/// `yaml.safe_load` into exactly the objects the source gives.
#[derive(Debug, clap::Parser)]
#[command(name = TOOL, version, after_long_help = protocol::cli::after_help(EXAMPLES))]
pub struct Args {
    #[command(flatten)]
    pub op: protocol::cli::OpArg,
    /// The top-level key whose "shapes" to split, kept as the key in every shard file: where the
    /// benchmark looks the op's shapes up (FlagGems: its benchmark class name) [default: the op]
    #[arg(long, value_name = "KEY")]
    pub entry: Option<String>,
    /// How many shards to make at most (fewer when the op has fewer shapes)
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub shards: u64,
    /// The scratch folder: gets w<i>/shapes.yaml per shard and plan.json (created if missing)
    #[arg(long, value_name = "SCRATCH")]
    pub out: PathBuf,
    /// The shape file (YAML read by PyYAML's safe_load)
    #[arg(value_name = "SHAPE_FILE")]
    pub shape_file: PathBuf,
}

pub fn run(args: &Args) -> Result<Status> {
    let op = args.op.name().to_owned();
    let path = &args.shape_file;
    let name = path.display().to_string();
    if path.is_dir() {
        anyhow::bail!("{name}: is a directory: give the shape file (a YAML file)");
    }
    let bytes = std::fs::read(path)
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
    )?;
    if cut.pieces.len() < 2 {
        eprintln!(
            "{TOOL}: op {op:?} has {} shape(s) in {name} and --shards is {}: fewer than 2 shards would result, nothing to do",
            cut.total, args.shards
        );
        return Ok(Status::NothingToDo);
    }
    let plan = Plan {
        version: VERSION,
        op: op.clone(),
        entry: Some(entry.unwrap_or(&op).to_owned()),
        source,
        strategy: "round-robin".to_owned(),
        shapes: cut.total,
        shards: cut
            .pieces
            .iter()
            .enumerate()
            .map(|(i, p)| Shard {
                index: i,
                shape_file: shapes_in_scratch(i),
                shapes: p.shapes.clone(),
            })
            .collect(),
    };
    let scratch = Scratch::new(&args.out);
    let texts: Vec<&str> = cut.pieces.iter().map(|p| p.text.as_str()).collect();
    let replaced = commit::replace(&scratch, &texts, &plan)?;
    if replaced.plan {
        eprintln!(
            "{TOOL}: replaced the plan in {} from an earlier run",
            args.out.display()
        );
    }
    for path in &replaced.removed {
        eprintln!("{TOOL}: removed {} left by the earlier run", path.display());
    }
    let sizes: Vec<String> = cut
        .pieces
        .iter()
        .map(|p| p.shapes.len().to_string())
        .collect();
    eprintln!(
        "{TOOL}: op {op}: {} shapes into {} shards of {} in {}",
        cut.total,
        sizes.len(),
        sizes.join(", "),
        args.out.display()
    );
    let mut out = std::io::stdout().lock();
    for i in 0..cut.pieces.len() {
        writeln!(out, "{}", scratch.shapes(i).display()).context("writing to stdout")?;
    }
    out.flush().context("writing to stdout")?;
    Ok(Status::Done)
}
