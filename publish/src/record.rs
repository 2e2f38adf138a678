//! MERGED must be a record file `{kernel: {key: config}}` as Python's `json` reads it before it
//! may replace the harness's record: a torn or wrongly shaped file would make the replay run
//! fail, or silently sweep again, far from the step that broke it.

use anyhow::{bail, Context, Result};
use protocol::records::{Counts, Records};
use std::path::Path;

/// A checked record file: how messages name it, its bytes as given, and what it holds.
#[derive(Debug)]
pub struct Merged {
    pub name: String,
    pub bytes: Vec<u8>,
    pub counts: Counts,
    pub records: Records,
}

/// Reads MERGED (`-` is stdin) and checks its shape; the error names the file and position.
pub fn read(path: &Path) -> Result<Merged> {
    let (name, bytes) = if path.as_os_str() == "-" {
        let bytes = toolkit::file::read_bounded(std::io::stdin().lock(), toolkit::file::MAX_BYTES)
            .context("reading MERGED from stdin")?;
        ("<stdin>".to_owned(), bytes)
    } else {
        let name = path.display().to_string();
        if path.is_dir() {
            bail!("{name}: is a folder; give the merged record file warmup-merge wrote");
        }
        let bytes = toolkit::file::read(path).with_context(|| {
            format!("reading {name} (give the file warmup-merge wrote, or the SCRATCH folder it merged into with --in-scratch)")
        })?;
        (name, bytes)
    };
    let records = match Records::parse(&bytes) {
        Ok(records) => match records.bad_buckets.first() {
            Some(bad) => bail!("{name}: {bad}; give the file warmup-merge wrote"),
            None => records,
        },
        Err(why) => bail!("{}; give the file warmup-merge wrote", why.located(&name)),
    };
    Ok(Merged {
        name,
        bytes,
        counts: records.counts(),
        records,
    })
}
