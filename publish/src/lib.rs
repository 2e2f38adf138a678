//! `warmup-publish`: puts the merged configs where record mode would have written them
//! (`DIR/<op>.json`, atomically, with the sidecar that describes them: `meta`) and prints the
//! environment change that makes the next run replay them instead of sweeping again.

pub mod meta;
pub mod record;
pub mod replay;

use anyhow::{bail, Context, Result};
use protocol::env::RECORD_DIR;
use protocol::history;
use protocol::layout::Scratch;
use protocol::op::OpArg;
use std::io::Write;
use std::path::{Path, PathBuf};
use toolkit::Status;

pub use replay::Format;

pub const TOOL: &str = "warmup-publish";

const EXAMPLES: &str = "EXAMPLES:
  eval \"$(warmup-publish --op mm merged.json)\"
  warmup-merge --in-scratch /tmp/run && eval \"$(warmup-publish --op mm /tmp/run)\"
  warmup-merge /tmp/run | warmup-publish --fallback-dir /tmp/run/merged -
  warmup-publish --format make merged.json > replay.mk    # then: include replay.mk
  warmup-publish --format json --record-dir out merged.json

DIR is --record-dir, else $FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR when set and not blank, else
--fallback-dir.";

/// Publish merged configs to DIR/<op>.json and print the replay environment.
#[derive(Debug, clap::Parser)]
#[command(name = TOOL, version, after_long_help = toolkit::cli::after_help(EXAMPLES))]
pub struct Args {
    #[command(flatten)]
    pub op: OpArg,

    /// Folder to publish into [default: $FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR when not blank]
    #[arg(long, value_name = "DIR")]
    pub record_dir: Option<PathBuf>,

    /// Folder to publish into when neither --record-dir nor the record variable gives one
    #[arg(long, value_name = "DIR")]
    pub fallback_dir: Option<PathBuf>,

    /// How to print the environment change
    #[arg(long, value_enum, default_value_t = Format::Sh)]
    pub format: Format,

    /// The merged record file warmup-merge wrote, or a SCRATCH folder (then its merged.json,
    /// which `warmup-merge --in-scratch SCRATCH` writes); `-` is stdin
    #[arg(value_name = "MERGED")]
    pub merged: PathBuf,
}

pub fn run(args: &Args) -> Result<Status> {
    let op = args.op.name();
    if op.contains(['/', '\0']) || op == "." || op == ".." {
        bail!("op {op:?} cannot be a file name; give --op a plain name such as mm");
    }
    let merged = &args.merged;
    let scratch = merged.is_dir().then(|| Scratch::new(merged));
    let source = scratch
        .as_ref()
        .map_or_else(|| merged.clone(), Scratch::merged);
    let merged = record::read(&source)?;
    if merged.counts.configs == 0 {
        eprintln!(
            "{TOOL}: {}: no configs ({}); nothing written",
            merged.name, merged.counts
        );
        return Ok(Status::NothingToDo);
    }
    let dir = absolute_record_dir(args)?;
    let file = dir.join(format!("{op}.json"));
    // Rendered first: a path the format cannot carry must fail before anything is written.
    let env = replay::render(args.format, &dir, &file)?;
    let combined = match &scratch {
        Some(scratch) => meta::combine(scratch, op)?,
        None => meta::Combined::default(),
    };
    for note in &combined.notes {
        eprintln!("{TOOL}: {note}");
    }

    std::fs::create_dir_all(&dir)
        .with_context(|| format!("creating record folder {}", dir.display()))?;
    // The lock every record session of the op holds while it adds a key: the record is not
    // replaced under a session folding its journal into it, nor the journal removed mid-append.
    let _record_lock = toolkit::lock::update_lock(TOOL, &history::record_lock_target(&dir, op))?;
    let sidecar = history::meta_path(&dir, op);
    let wrote = match &combined.sidecar {
        Some(bytes) => {
            toolkit::atomic::commit_all([
                toolkit::atomic::stage(&file, |out| out.write_all(&merged.bytes))?,
                toolkit::atomic::stage(&sidecar, |out| out.write_all(bytes))?,
            ])?;
            format!(", the shards' versions and device to {}", sidecar.display())
        }
        None => {
            toolkit::atomic::write(&file, &merged.bytes)?;
            // The replay would check the new configs against another record's versions and device.
            remove_stale(
                &sidecar,
                "which described the record it replaced",
                "the replay checks the new configs against it",
            )?
        }
    };
    // A killed record session's unfolded keys: the replay pins a journal's keys over the
    // record's, so one older than the record just published would replay another run's configs.
    let wrote = wrote
        + &remove_stale(
            &history::journal_path(&dir, op),
            "the unfolded keys of an earlier record session, which the published record replaces",
            "the replay pins them over the published record",
        )?;
    let mut out = std::io::stdout().lock();
    out.write_all(&env)
        .and_then(|()| out.flush())
        .context("writing to stdout")?;
    eprintln!(
        "{TOOL}: wrote {} to {}{wrote}",
        merged.counts,
        file.display()
    );
    Ok(Status::Done)
}

/// Removes a file beside the record that the record just published makes stale: `what` it is,
/// and `unless` what the replay would do with it if it stayed. Says so, or nothing where there
/// was none.
fn remove_stale(path: &Path, what: &str, unless: &str) -> Result<String> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(format!("; removed {}, {what}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(e).with_context(|| {
            format!(
                "removing {} ({what}); remove it by hand, or {unless}",
                path.display()
            )
        }),
    }
}

/// [`record_dir`], made absolute (links not resolved).
fn absolute_record_dir(args: &Args) -> Result<PathBuf> {
    let dir = record_dir(args)?;
    std::path::absolute(&dir)
        .with_context(|| format!("{}: cannot make the path absolute", dir.display()))
}

/// The harness's record variable, as the plugin read it (`protocol::env::record_dir_of`).
fn env_record_dir() -> Option<PathBuf> {
    protocol::env::record_dir_of(std::env::var_os(RECORD_DIR).as_deref())
}

/// `--record-dir`, else the harness's record variable (trimmed, as the plugin read it), else
/// `--fallback-dir`.
fn record_dir(args: &Args) -> Result<PathBuf> {
    if let Some(dir) = &args.record_dir {
        return Ok(dir.clone());
    }
    if let Some(dir) = env_record_dir() {
        return Ok(dir);
    }
    match &args.fallback_dir {
        Some(dir) => Ok(dir.clone()),
        None => bail!(
            "no record folder: give --record-dir DIR, set {RECORD_DIR}, or give --fallback-dir DIR"
        ),
    }
}
