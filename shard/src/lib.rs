//! `warmup-shard`: splits one op's shapes in a PyYAML shape file into per-shard shape files under
//! a scratch folder (round-robin, or balanced by expected costs: `strategy`), and writes the plan
//! the other tools read.

mod by_key;
mod commit;
mod flags;
mod flow;
mod listing;
mod robust;
mod shape;
mod shape_file;
mod split;
mod strategy;

use anyhow::Result;
use toolkit::Status;

pub use flags::{Args, TOOL};
pub use split::{split, Piece, Split};
pub use strategy::{Balance, Model, Strategy};

/// The tool's run: a by-key plan, or the shape file's shards read, decided and written
/// (`flow`).
pub fn run(args: &Args) -> Result<Status> {
    let Some(path) = args.shape_file.as_ref().filter(|_| !args.by_key) else {
        return by_key::run(args.op.name(), args.shards, &args.out);
    };
    let inputs = flow::Inputs::read(args, path)?;
    match flow::Sharded::decide(args, inputs)? {
        Some(sharded) => sharded.write(args),
        None => Ok(Status::NothingToDo),
    }
}
