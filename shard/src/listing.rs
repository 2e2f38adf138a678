//! What warmup-shard prints on stdout: the shard files, one per line, in shard order; the same
//! lines for `--dry-run`, which writes none of them, so that a caller learns how many shards a
//! split makes (k = min(N, shapes)) before anything is written (warmup-slurm sizes its job array
//! by it).

use anyhow::{Context, Result};
use protocol::layout::Scratch;
use std::io::Write;

/// Prints the `shards` shard files of `scratch`.
pub fn print(scratch: &Scratch, shards: usize) -> Result<()> {
    let mut out = std::io::stdout().lock();
    for i in 0..shards {
        writeln!(out, "{}", scratch.shapes(i).display()).context("writing to stdout")?;
    }
    out.flush().context("writing to stdout")
}
