//! `warmup-cache`: see and manage the record cache, where scripts/warmup keeps the tuned configs
//! of every run that names no record folder (docs/CONTRACT.md, "The record cache").
//!
//! A tool of its own because the cache is the user's, not a run's: no step of the flow lists or
//! prunes it. Where the cache is and how its folders are named is `protocol::cache_dir`'s, the
//! rule warmup-plan records by; [`entries`] reads what it holds, [`remove`] deletes under the
//! locks its writers take; the machine's Triton and device (`--unused`) come from
//! `protocol::probe`, as warmup-shard's and warmup-costs' do.

pub mod entries;
pub mod remove;

use anyhow::{bail, Context, Result};
use entries::Entry;
use protocol::cache_dir;
use std::io::Write;
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
      machine's (they never answer a run here)
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
        "usage error, or no cache folder (neither XDG_CACHE_HOME nor HOME is set), or this machine's Triton cannot be told for --unused",
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
    /// Remove op OP's record in every folder
    #[arg(long, value_name = "OP", group = "which")]
    pub op: Option<String>,
    /// Remove records no run used in the last DAYS days (a fraction allowed)
    #[arg(long, value_name = "DAYS", group = "which", value_parser = toolkit::cli::non_negative)]
    pub older_than: Option<f64>,
    /// Remove the folders of another Triton version or device model than this machine's
    #[arg(long, group = "which")]
    pub unused: bool,
    /// Print what would be removed, and remove nothing
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
                list_json(&entries)
            } else {
                list_table(&entries)
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

fn scan(root: &std::path::Path) -> Result<Vec<Entry>> {
    entries::scan(root).with_context(|| format!("reading the cache folder {}", root.display()))
}

fn remove_entries(root: &std::path::Path, args: &RemoveArgs) -> Result<Status> {
    let all = scan(root)?;
    let chosen: Vec<&Entry> = if let Some(op) = &args.op {
        all.iter().filter(|e| e.op == op.trim()).collect()
    } else if let Some(days) = args.older_than {
        let limit = SystemTime::now()
            .checked_sub(Duration::from_secs_f64((days * 86_400.0).min(1e15)))
            .unwrap_or(SystemTime::UNIX_EPOCH);
        all.iter()
            .filter(|e| e.last_use.is_none_or(|t| t < limit))
            .collect()
    } else {
        let mut platform = args.platform.clone();
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
        let mine = cache_dir::slug(
            Some(triton),
            here.device.as_deref(),
            &protocol::probe::root(),
        );
        eprintln!(
            "{TOOL}: this machine: Triton {triton}, device {} (folder {mine})",
            here.device.as_deref().unwrap_or("unknown")
        );
        all.iter()
            .filter(|e| e.folder.file_name().is_none_or(|n| n != mine.as_str()))
            .collect()
    };
    let mut out = std::io::stdout().lock();
    let mut status = Status::Done;
    for entry in &chosen {
        let line = format!("{} {}", entry.op, entry.folder.display());
        if args.dry_run {
            writeln!(out, "would remove {line}").context("writing to stdout")?;
            continue;
        }
        match remove::remove(TOOL, entry)? {
            remove::Removed::Done => {
                writeln!(out, "removed {line}").context("writing to stdout")?
            }
            remove::Removed::InUse => {
                eprintln!(
                    "{TOOL}: op {} in {} is in use by a running record session; left as it is (remove it once the run ends)",
                    entry.op,
                    entry.folder.display()
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

fn list_table(entries: &[Entry]) -> String {
    let count = |n: Option<usize>| n.map_or_else(|| "?".to_owned(), |n| n.to_string());
    let rows: Vec<[String; 8]> = entries
        .iter()
        .map(|e| {
            [
                e.op.clone(),
                count(e.kernels),
                count(e.keys),
                e.triton.clone().unwrap_or_else(|| "-".into()),
                e.device.clone().unwrap_or_else(|| "-".into()),
                size(e.bytes),
                e.last_use.map_or_else(|| "-".into(), date),
                e.folder
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            ]
        })
        .collect();
    let head = [
        "OP", "KERNELS", "KEYS", "TRITON", "DEVICE", "SIZE", "LAST USE", "FOLDER",
    ]
    .map(str::to_owned);
    let mut widths = head.clone().map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut text = String::new();
    for row in std::iter::once(&head).chain(&rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        text.push_str(cells.join("  ").trim_end());
        text.push('\n');
    }
    text
}

fn list_json(entries: &[Entry]) -> String {
    let items: Vec<serde_json::Value> = entries
        .iter()
        .map(|e| {
            let unix = e
                .last_use
                .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
                .map(|d| d.as_secs());
            serde_json::json!({
                "op": e.op,
                "kernels": e.kernels,
                "keys": e.keys,
                "triton": e.triton,
                "device": e.device,
                "bytes": e.bytes,
                "last_use": unix,
                "folder": e.folder.to_string_lossy(),
            })
        })
        .collect();
    let mut text = serde_json::Value::from(items).to_string();
    text.push('\n');
    text
}

fn size(bytes: u64) -> String {
    let mut value = bytes as f64;
    for unit in ["B", "K", "M", "G"] {
        if value < 1024.0 || unit == "G" {
            return if unit == "B" {
                format!("{bytes}B")
            } else {
                format!("{value:.1}{unit}")
            };
        }
        value /= 1024.0;
    }
    unreachable!("G ends the loop")
}

/// `YYYY-MM-DD HH:MM` in UTC (the civil-from-days rule, so no time zone database is needed).
fn date(t: SystemTime) -> String {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let (h, m) = ((secs % 86_400) / 3600, (secs % 3600) / 60);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {h:02}:{m:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_civil_dates() {
        let at = |s: u64| date(SystemTime::UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01 00:00");
        assert_eq!(at(951_782_400), "2000-02-29 00:00");
        assert_eq!(at(1_796_300_000), "2026-12-03 12:13");
    }

    #[test]
    fn sizes_are_short() {
        assert_eq!(size(512), "512B");
        assert_eq!(size(2048), "2.0K");
        assert_eq!(size(5 << 20), "5.0M");
    }
}
