//! `warmup-cache`: see and manage the record cache, where scripts/warmup keeps the tuned configs
//! of every run that names no record folder (docs/CONTRACT.md, "The record cache").
//!
//! A tool of its own because the cache is the user's, not a run's: no step of the flow lists or
//! prunes it. Where the cache is and how its folders are named is `protocol::cache_dir`'s, the
//! rule warmup-plan records by; [`entries`] reads what it holds, [`listing`] shows it, [`remove`]
//! deletes under the locks its writers take; the machine's Triton and device (`--unused`) come
//! from `protocol::probe`, as warmup-shard's and warmup-costs' do.

pub mod entries;
pub mod listing;
pub mod remove;

use anyhow::{bail, Context, Result};
use entries::Entry;
use listing::shown;
use protocol::cache_dir;
use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use toolkit::Status;

pub const TOOL: &str = "warmup-cache";

const EXAMPLES: &str = "EXAMPLES:
  warmup-cache list
      each op's record in the cache: kernels, keys, Triton, device, size, last use, folder
  warmup-cache list --json | jq '.[] | select(.keys > 100)'
  warmup-cache remove --op mm
      forgets op mm's configs, for every Triton and device: the next run tunes them again
  warmup-cache remove --older-than 30
      removes the records no run used in the last 30 days
  warmup-cache remove --unused --python .venv/bin/python
      removes the records of another Triton than that Python's, or another GPU model than this
      machine's (they never answer a run here); where no driver file names this machine's GPU,
      add --device-model NAME
  warmup-cache path
      prints the cache folder

SHARING A RECORD:
  A cache folder is a record folder like any other, laid out as the contract says, and
  portable: copy the subfolder of your Triton and GPU model to another machine's cache, or to
  a team folder, and point FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR there:
      rsync -a \"$(warmup-cache path)/3.6.0_NVIDIA-H200_<hash>/\" /team/records/h200/
      FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=/team/records/h200 warmup -- pytest ...
  A named folder is used instead of the cache, and runs at once share one safely.";

const EXIT_STATUS: [(&str, &str); 3] = [
    ("0", "done (with nothing to list or remove too)"),
    (
        "1",
        "remove: a record a running session uses was left as it is (the others were removed)",
    ),
    (
        "2",
        "usage error, or no cache folder (neither XDG_CACHE_HOME nor HOME is set), or this machine's Triton or device model cannot be told for --unused",
    ),
];

/// See and manage the record cache that runs of warmup with no record folder share.
#[derive(Debug, clap::Parser)]
#[command(name = TOOL, version, about, after_long_help = toolkit::cli::after_help(EXAMPLES, &toolkit::exit_status_help(&EXIT_STATUS)))]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// List each op's record: kernels, keys, Triton, device, size, last use, folder
    List {
        /// One JSON array of objects, for scripts
        #[arg(long)]
        json: bool,
    },
    /// Remove records: by op, by age, or those of a Triton or device this machine does not use
    Remove(RemoveArgs),
    /// Print the cache folder
    Path,
}

#[derive(Debug, clap::Args)]
#[group(id = "which", required = true, multiple = false)]
pub struct RemoveArgs {
    /// Remove op OP's record in every folder (trimmed; a name the harness could give its files)
    #[arg(long, value_name = "OP", group = "which",
          value_parser = clap::builder::TypedValueParser::try_map(clap::builder::OsStringValueParser::new(), protocol::op::os_name))]
    pub op: Option<OsString>,
    /// Remove records no run used in the last DAYS days (a fraction allowed)
    #[arg(long, value_name = "DAYS", group = "which", value_parser = toolkit::cli::non_negative)]
    pub older_than: Option<f64>,
    /// Remove the folders of another Triton version or device model than this machine's
    #[arg(long, group = "which")]
    pub unused: bool,
    /// Print what would be removed and what kept, and remove nothing (the exit status is the
    /// removal's)
    #[arg(long)]
    pub dry_run: bool,
    /// This machine's Triton and device, for --unused [default Python: python3 on PATH]
    #[command(flatten)]
    pub platform: protocol::probe::PlatformArgs,
}

pub fn run(args: &Args) -> Result<Status> {
    let root =
        cache_dir::current_root().map_err(|why| anyhow::anyhow!("no record cache: {why}"))?;
    match &args.command {
        Command::Path => {
            let mut out = std::io::stdout().lock();
            out.write_all(root.as_os_str().as_encoded_bytes())
                .and_then(|()| out.write_all(b"\n"))
                .context("writing to stdout")?;
            Ok(Status::Done)
        }
        Command::List { json } => {
            let entries = scan(&root)?;
            let text = if *json {
                listing::json(&entries)
            } else {
                listing::table(&entries)
            };
            std::io::stdout()
                .lock()
                .write_all(text.as_bytes())
                .context("writing to stdout")?;
            if entries.is_empty() {
                eprintln!("{TOOL}: {} holds no record", root.display());
            }
            Ok(Status::Done)
        }
        Command::Remove(remove) => remove_entries(&root, remove),
    }
}

fn scan(root: &Path) -> Result<Vec<Entry>> {
    entries::scan(root).with_context(|| format!("reading the cache folder {}", root.display()))
}

fn remove_entries(root: &Path, args: &RemoveArgs) -> Result<Status> {
    // Each entry with the folder it leads to: a folder reached by two names (a link to a team
    // folder beside it) is one folder.
    let all: Vec<(Entry, PathBuf)> = scan(root)?
        .into_iter()
        .map(|e| {
            let real = std::fs::canonicalize(&e.folder).unwrap_or_else(|_| e.folder.clone());
            (e, real)
        })
        .collect();
    let chosen: Vec<&(Entry, PathBuf)> = if let Some(op) = &args.op {
        all.iter().filter(|(e, _)| &e.op == op).collect()
    } else if let Some(days) = args.older_than {
        let limit = SystemTime::now()
            .checked_sub(Duration::from_secs_f64((days * 86_400.0).min(1e15)))
            .unwrap_or(SystemTime::UNIX_EPOCH);
        all.iter()
            .filter(|(e, _)| e.last_use.is_none_or(|t| t < limit))
            .collect()
    } else {
        let mine = this_machine(root, &args.platform)?;
        all.iter()
            .filter(|(e, real)| !mine.holds(&e.folder, real))
            .collect()
    };
    let mut out = std::io::stdout().lock();
    let mut status = Status::Done;
    let mut done: HashSet<(&Path, &OsStr)> = HashSet::new();
    for (entry, real) in chosen.iter().copied() {
        if !done.insert((real, &entry.op)) {
            continue;
        }
        let line = format!("{} {}", shown(&entry.op), shown(&entry.folder));
        let removed = if args.dry_run {
            if remove::in_use(entry)? {
                remove::Removed::InUse
            } else {
                writeln!(out, "would remove {line}").context("writing to stdout")?;
                continue;
            }
        } else {
            remove::remove(TOOL, entry)?
        };
        match removed {
            remove::Removed::Done => {
                writeln!(out, "removed {line}").context("writing to stdout")?
            }
            remove::Removed::InUse => {
                let kept = if args.dry_run {
                    "would be left"
                } else {
                    "left"
                };
                eprintln!(
                    "{TOOL}: op {} in {} is in use by a running record session; {kept} as it is (remove it once the run ends)",
                    shown(&entry.op),
                    shown(&entry.folder)
                );
                status = Status::Partial;
            }
        }
    }
    if chosen.is_empty() {
        eprintln!("{TOOL}: nothing to remove in {}", root.display());
    }
    Ok(status)
}

/// This machine's cache folder, which `--unused` keeps: by its name, and by where it leads (a
/// link to a team folder under another name leads to the same records).
struct Mine {
    name: String,
    real: Option<PathBuf>,
}

impl Mine {
    /// Whether `folder`, which leads to `real`, is this machine's.
    fn holds(&self, folder: &Path, real: &Path) -> bool {
        folder.file_name().is_some_and(|n| n == self.name.as_str())
            || self.real.as_deref() == Some(real)
    }
}

/// This machine's Triton and device model, each told or named; where either cannot be, every
/// folder would look like another machine's, so `--unused` removes nothing.
fn this_machine(root: &Path, args: &protocol::probe::PlatformArgs) -> Result<Mine> {
    let blank = |v: &Option<String>| v.as_deref().is_some_and(|v| v.trim().is_empty());
    if blank(&args.triton) {
        bail!("--triton is blank: give this machine's Triton version (such as 3.6.0), or drop it and give --python PYTHON");
    }
    if blank(&args.device_model) {
        bail!("--device-model is blank: give this machine's GPU model as its records name it (such as \"NVIDIA H200\")");
    }
    let mut platform = args.clone();
    if platform.triton.is_none() && platform.python.is_none() {
        platform.python = Some("python3".into());
    }
    let here = platform.find();
    let Some(triton) = &here.triton else {
        bail!(
            "--unused: cannot tell this machine's Triton ({} has no triton installed): give --python PYTHON (the one that runs your benchmarks) or --triton VERSION",
            platform.python.unwrap_or_default().display()
        );
    };
    let Some(device) = &here.device else {
        bail!(
            "--unused: cannot tell this machine's device model (no NVIDIA driver, AMD or PCI GPU files name one), so every folder would look like another GPU's: pass --device-model NAME (as `warmup-cache list` shows it); nothing removed"
        );
    };
    let name = cache_dir::slug(Some(triton), Some(device), &protocol::probe::root());
    eprintln!("{TOOL}: this machine: Triton {triton}, device {device} (folder {name})");
    let real = std::fs::canonicalize(root.join(&name)).ok();
    Ok(Mine { name, real })
}
