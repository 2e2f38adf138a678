//! The split run after the command line, as steps that hand each other typed values:
//! [`Inputs`] (the costs that balance the split, and the shape file, read) -> [`Sharded`] (the
//! shards cut and the plan that names them, decided in memory) -> written (the shard files and
//! `plan.json` put in place, or, for `--dry-run`, only their paths printed).

use crate::flags::{Args, TOOL};
use crate::split::{split, Piece, Split};
use crate::strategy::{Balance, Model, Strategy};
use crate::{commit, listing};
use anyhow::{Context, Result};
use protocol::costs::CostFile;
use protocol::layout::{shapes_in_scratch, Scratch};
use protocol::shard_plan::{Shard, ShardPlan, VERSION};
use std::path::{Path, PathBuf};
use toolkit::Status;

/// What the split reads: how to balance it, and the shape file.
#[derive(Debug)]
pub struct Inputs {
    balance: Balance,
    /// The shape file as given, as messages name it.
    name: String,
    bytes: Vec<u8>,
    /// The shape file's absolute path, as the plan and the shard files' comments name it.
    source: PathBuf,
}

impl Inputs {
    /// Reads the costs (`--costs`, or `--history` with a line saying what it gave), then the shape
    /// file at `path`.
    pub fn read(args: &Args, path: &Path) -> Result<Inputs> {
        let balance = balance(args)?;
        let name = path.display().to_string();
        if path.is_dir() {
            anyhow::bail!("{name}: is a directory: give the shape file (a YAML file)");
        }
        let bytes = toolkit::file::read(path)
            .with_context(|| format!("reading shape file {name} (check the path)"))?;
        let source =
            std::fs::canonicalize(path).with_context(|| format!("resolving the path of {name}"))?;
        Ok(Inputs {
            balance,
            name,
            bytes,
            source,
        })
    }
}

/// The strategy and the costs it balances by, as the command line asks.
fn balance(args: &Args) -> Result<Balance> {
    let strategy = args.strategy.unwrap_or(if args.history.is_some() {
        Strategy::Lpt
    } else {
        Strategy::RoundRobin
    });
    let costs = match (&args.costs, &args.history) {
        (Some(path), _) => Some(CostFile::load(path)?),
        (None, Some(dir)) => from_history(dir, args),
        (None, None) => None,
    };
    Ok(Balance {
        strategy,
        costs,
        model: args.cost_model,
        overhead: args.overhead,
    })
}

/// The costs of the op's last sweep kept in the record folder `dir`, when that sweep ran on this
/// run's Triton and device model; else `None`, after a line saying why.
fn from_history(dir: &Path, args: &Args) -> Option<CostFile> {
    let op = args.op.name();
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

/// The split decided, nothing written yet: each shard file's text and the plan naming them.
#[derive(Debug)]
pub struct Sharded {
    /// Shard i's shape file text at i.
    texts: Vec<String>,
    plan: ShardPlan,
}

impl Sharded {
    /// Cuts the op's shapes into shards and builds their plan; `None`, after a line saying so,
    /// when fewer than 2 shards would result.
    pub fn decide(args: &Args, inputs: Inputs) -> Result<Option<Sharded>> {
        let op = args.op.name();
        let name = &inputs.name;
        let shards = usize::try_from(args.shards).unwrap_or(usize::MAX);
        let entry = args.entry.as_deref();
        let cut = split(
            &inputs.bytes,
            name,
            &inputs.source.display().to_string(),
            op,
            entry,
            shards,
            &inputs.balance,
        )?;
        if cut.pieces.len() < 2 {
            eprintln!(
                "{TOOL}: op {op:?} has {} shape(s) in {name} and --shards is {}: fewer than 2 shards would result, nothing to do",
                cut.total, args.shards
            );
            return Ok(None);
        }
        let plan = plan(
            op,
            entry.unwrap_or(op),
            inputs.source,
            inputs.balance.strategy,
            &cut,
        );
        let texts = cut.pieces.into_iter().map(|p| p.text).collect();
        Ok(Some(Sharded { texts, plan }))
    }

    /// Puts the shard files and the plan into `--out` and says what was made, or for
    /// `--dry-run` writes nothing; either way prints the shard files' paths.
    pub fn write(self, args: &Args) -> Result<Status> {
        let scratch = Scratch::new(&args.out);
        if args.dry_run {
            listing::print(&scratch, self.texts.len())?;
            return Ok(Status::Done);
        }
        let texts: Vec<&str> = self.texts.iter().map(String::as_str).collect();
        commit::replace(&scratch, &texts, &self.plan)?.report(&args.out);
        self.say_written(&args.out);
        listing::print(&scratch, self.texts.len())?;
        Ok(Status::Done)
    }

    /// The lines saying how the shapes went into the shards written to `out`, and their
    /// expected costs where the plan has them.
    fn say_written(&self, out: &Path) {
        let plan = &self.plan;
        let sizes: Vec<String> = plan
            .shards
            .iter()
            .map(|s| s.shapes.len().to_string())
            .collect();
        eprintln!(
            "{TOOL}: op {}: {} shapes into {} shards of {} in {} ({})",
            plan.op,
            plan.shapes,
            sizes.len(),
            sizes.join(", "),
            out.display(),
            plan.strategy
        );
        if let Some(line) = expected_line(plan) {
            eprintln!("{TOOL}: {line}");
        }
    }
}

/// The plan of `cut`'s shards of `op`'s shapes, kept under `entry` in `source`.
fn plan(op: &str, entry: &str, source: PathBuf, strategy: Strategy, cut: &Split) -> ShardPlan {
    ShardPlan {
        version: VERSION,
        op: op.to_owned(),
        entry: Some(entry.to_owned()),
        mode: None,
        source,
        strategy: strategy.name().to_owned(),
        cost_source: cut.costs.as_ref().map(|c| c.source.to_owned()),
        shapes: cut.total,
        shards: cut
            .pieces
            .iter()
            .enumerate()
            .map(|(i, piece)| shard(i, piece, cut))
            .collect(),
    }
}

/// Shard `index` of the plan: its shapes, their texts and expected costs.
fn shard(index: usize, piece: &Piece, cut: &Split) -> Shard {
    let costs: Option<Vec<f64>> = cut
        .costs
        .as_ref()
        .map(|c| piece.shapes.iter().map(|&j| c.per_shape[j]).collect());
    Shard {
        index,
        shape_file: shapes_in_scratch(index),
        shapes: piece.shapes.clone(),
        shape_texts: Some(
            piece
                .shapes
                .iter()
                .map(|&j| cut.shapes[j].text.clone())
                .collect(),
        ),
        expected_cost: costs.as_ref().map(|c| c.iter().sum()),
        shape_costs: costs,
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
