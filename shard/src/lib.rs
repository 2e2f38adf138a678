//! `warmup-shard`: splits one op's shapes in a PyYAML shape file round-robin into per-shard shape
//! files under a scratch folder, and writes the plan the other tools read.

pub mod emit;
pub mod resolve;
pub mod schema;
pub mod split;
pub mod tree;

use anyhow::{Context, Result};
use protocol::layout::{worker_dir, Scratch};
use protocol::plan::{Plan, Shard, VERSION};
use protocol::Status;
use std::io::Write;
use std::path::PathBuf;

pub use split::{split, Piece, Split};

pub const TOOL: &str = "warmup-shard";

const EXAMPLES: &str = "EXAMPLES:
  warmup-shard --op mm --shards 4 --out /tmp/run core_shapes.yaml
      writes /tmp/run/w0/shapes.yaml .. w3/shapes.yaml and /tmp/run/plan.json
  FLAGGEMS_PERF_CURRENT_OP=addmm warmup-shard --shards 8 --out \"$SCRATCH\" shapes.yaml | xargs wc -l";

/// Split an op's shapes in a shape file round-robin into shard files a child reads with
/// `yaml.safe_load` into exactly the objects the source gives.
#[derive(Debug, clap::Parser)]
#[command(name = TOOL, version, after_long_help = protocol::cli::after_help(EXAMPLES))]
pub struct Args {
    #[command(flatten)]
    pub op: protocol::cli::OpArg,
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
    let cut = split(&bytes, &name, &source.display().to_string(), &op, shards)?;
    if cut.pieces.len() < 2 {
        eprintln!(
            "{TOOL}: op {op:?} has {} shape(s) in {name} and --shards is {}: fewer than 2 shards would result, nothing to do",
            cut.total, args.shards
        );
        return Ok(Status::NothingToDo);
    }
    write(args, &op, source, &cut)
}

/// Writes every shard file, then the plan, then clears a previous run's surplus shard folders.
fn write(args: &Args, op: &str, source: PathBuf, cut: &Split) -> Result<Status> {
    let scratch = Scratch::new(&args.out);
    std::fs::create_dir_all(scratch.root())
        .with_context(|| format!("creating scratch folder {}", args.out.display()))?;
    let _lock = scratch.lock()?;
    let replacing = scratch.plan().exists();
    for (i, piece) in cut.pieces.iter().enumerate() {
        let dir = scratch.worker(i);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        scratch.clear_outputs(i)?;
        protocol::atomic::write(&scratch.shapes(i), piece.text.as_bytes())?;
    }
    let plan = Plan {
        version: VERSION,
        op: op.to_owned(),
        source,
        strategy: "round-robin".to_owned(),
        shapes: cut.total,
        shards: cut
            .pieces
            .iter()
            .enumerate()
            .map(|(i, p)| Shard {
                index: i,
                shape_file: PathBuf::from(worker_dir(i)).join("shapes.yaml"),
                shapes: p.shapes.clone(),
            })
            .collect(),
    };
    plan.save(&scratch)?;
    if replacing {
        eprintln!(
            "{TOOL}: replaced the plan in {} from an earlier run",
            args.out.display()
        );
        remove_stale(&scratch, cut.pieces.len())?;
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

/// Removes `w<i>` folders with i >= k left by an earlier, wider run.
fn remove_stale(scratch: &Scratch, k: usize) -> Result<()> {
    let entries = std::fs::read_dir(scratch.root())
        .with_context(|| format!("listing {}", scratch.root().display()))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(index) = name
            .to_str()
            .and_then(|n| n.strip_prefix('w'))
            .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|d| d.parse::<usize>().ok())
        else {
            continue;
        };
        if index >= k && entry.file_type().is_ok_and(|t| t.is_dir()) {
            std::fs::remove_dir_all(entry.path())
                .with_context(|| format!("removing stale {}", entry.path().display()))?;
            eprintln!(
                "{TOOL}: removed {} left by the earlier run",
                entry.path().display()
            );
        }
    }
    Ok(())
}
