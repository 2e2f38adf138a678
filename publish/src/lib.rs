//! `warmup-publish`: puts the merged configs where record mode would have written them
//! (`DIR/<op>.json`, atomically, with the sidecar that describes them: `meta`) and prints the
//! environment change that makes the next run replay them instead of sweeping again. The record
//! there is never shortened: its keys, and a killed session's journal (`journal`), stay under
//! the new configs (`last_wins`).

pub mod journal;
pub mod last_wins;
pub mod meta;
pub mod record;
pub mod replay;

use anyhow::{bail, Context, Result};
use protocol::env::RECORD_DIR;
use protocol::history;
use protocol::layout::Scratch;
use protocol::op::OpArg;
use protocol::records::{Counts, Records};
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

/// This tool's exit statuses (docs/CONTRACT.md, "Exit statuses").
const EXIT_STATUS: [(&str, &str); 3] = [
    (
        "0",
        "done: the record published, the replay environment on stdout",
    ),
    toolkit::USAGE_ROW,
    (
        "3",
        "nothing to do: MERGED holds no configs; nothing written",
    ),
];

/// Publish merged configs to DIR/<op>.json and print the replay environment.
#[derive(Debug, clap::Parser)]
#[command(name = TOOL, version, after_long_help = toolkit::cli::after_help(EXAMPLES, &toolkit::exit_status_help(&EXIT_STATUS)))]
pub struct Args {
    #[command(flatten)]
    pub op: OpArg,

    /// Folder to publish into [default: $FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR when not blank]
    #[arg(long, value_name = "DIR")]
    pub record_dir: Option<PathBuf>,

    /// Folder to publish into when neither --record-dir nor the record variable gives one
    #[arg(long, value_name = "DIR")]
    pub fallback_dir: Option<PathBuf>,

    /// The signature of the run whose sweep this is, when it ended with nothing missing (every
    /// shard ok): the published sidecar's `complete_for` [default: none, and the sidecar names
    /// no complete run]
    #[arg(long, value_name = "SIG")]
    pub signature: Option<String>,

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
    if let Some(why) = protocol::op::file_name_problem(op) {
        bail!("op {op:?} cannot be a file name ({why}); give --op a plain name such as mm");
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
    let file = protocol::layout::record_file(&dir, op);
    // Rendered first: a path the format cannot carry must fail before anything is written.
    let env = replay::render(args.format, &dir, args.op.given(), &file)?;
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
    // replaced under a session folding its journal into it, nor the journal removed mid-append;
    // and two publishes into the folder take turns, each adding to what the other published.
    let _record_lock = toolkit::lock::update_lock(TOOL, &history::record_lock_target(&dir, op))?;
    // First, so that a publish cut short leaves a record and sidecar without costs (no usable
    // history) rather than a new sidecar beside another run's costs.
    let mut wrote = forget_costs(&dir, op)?;
    let journal = Journal::find(&dir, op)?;
    let old = old_record(&file);
    let sidecar = history::meta_path(&dir, op);
    let old_sidecar = meta::load(&sidecar);
    // A kernel whose source or configs changed since DIR's record was made: its old keys were
    // decided for another kernel, and the new sidecar's fingerprint would vouch for them.
    let changed = match (&old_sidecar, &combined.sidecar) {
        (Some(old), Some(new)) => meta::changed_kernels(old, new),
        _ => Vec::new(),
    };
    for kernel in &changed {
        eprintln!(
            "{TOOL}: kernel {kernel} changed since {} was recorded (its fingerprint differs): its \
             keys there are not kept",
            file.display()
        );
    }
    let still_same = |kernel: &str| !changed.iter().any(|c| c == kernel);
    let skip: Vec<String> = changed
        .iter()
        .map(|k| serde_json::Value::from(k.as_str()).to_string())
        .collect();
    let mut union = last_wins::LastWins::default();
    if let Some(old) = &old.records {
        union.update_except(old, &skip);
    }
    for entry in &journal.entries {
        union.update_except(&entry.record, &skip);
    }
    union.update(&merged.records);
    let kept = union.configs() - merged.counts.configs;
    let unchanged = kept == 0 && union.kernels() == merged.counts.kernels;
    let bytes = if unchanged {
        merged.bytes
    } else {
        union.to_bytes()
    };
    let counts = Counts {
        kernels: union.kernels(),
        configs: union.configs(),
    };
    wrote += &match combined.sidecar {
        Some(mut new) => {
            // The seconds of every key kept: the journal's (its last line for a key first),
            // then the sidecar's there; a key the shards have keeps the shards' figure.
            let journaled: Vec<(&str, &str, &serde_json::Value)> = journal
                .entries
                .iter()
                .rev()
                .filter_map(|e| e.seconds.as_ref())
                .map(|(kernel, key, seconds)| (kernel.as_str(), key.as_str(), seconds))
                .filter(|(kernel, _, _)| still_same(kernel))
                .collect();
            meta::keep_tune_seconds(&mut new, journaled);
            if let Some(old) = &old_sidecar {
                let mut entries = meta::tune_entries(old);
                entries.retain(|(kernel, _, _)| still_same(kernel));
                meta::keep_tune_seconds(&mut new, entries);
                meta::keep_fingerprints(&mut new, old);
            }
            for note in provenance(
                &mut new,
                &union,
                &merged.records,
                &journal,
                &old_sidecar,
                &file,
            ) {
                eprintln!("{TOOL}: {note}");
            }
            match &args.signature {
                Some(sig) => {
                    new.insert(history::COMPLETE_FOR.into(), sig.as_str().into());
                }
                None => {
                    new.remove(history::COMPLETE_FOR);
                }
            }
            let text = meta::to_bytes(&new)?;
            toolkit::atomic::commit_all([
                toolkit::atomic::stage(&file, |out| out.write_all(&bytes))?,
                toolkit::atomic::stage(&sidecar, |out| out.write_all(&text))?,
            ])?;
            format!(", the shards' versions and device to {}", sidecar.display())
        }
        None => {
            toolkit::atomic::write(&file, &bytes)?;
            // The replay would check the new configs against another record's versions and device.
            remove_stale(
                &sidecar,
                "which described the record it replaced",
                "the replay checks the new configs against it",
            )?
        }
    };
    wrote += &journal.finish()?;
    let mut out = std::io::stdout().lock();
    out.write_all(&env)
        .and_then(|()| out.flush())
        .context("writing to stdout")?;
    let kept = match kept {
        0 => String::new(),
        n => format!(
            " ({} from this run, {n} key(s) kept from the record there, which this run did not \
             decide)",
            merged.counts
        ),
    };
    eprintln!("{TOOL}: wrote {counts}{kept} to {}{wrote}", file.display());
    if let Some(note) = old.note {
        eprintln!("{TOOL}: {note}");
    }
    Ok(Status::Done)
}

/// The record already in DIR, whose keys the published record keeps; a note where it cannot be
/// read as one (then none of it is kept, as before a record folder held anything).
struct Old {
    records: Option<Records>,
    note: Option<String>,
}

fn old_record(file: &Path) -> Old {
    let name = file.display();
    let read = match toolkit::file::read(file) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Old {
                records: None,
                note: None,
            }
        }
        Err(e) => Err(format!("{name}: cannot be read ({e})")),
        Ok(bytes) => Records::parse(&bytes).map_err(|why| why.located(&name.to_string())),
    };
    match read {
        Ok(records) => {
            let note = records.bad_buckets.first().map(|bad| {
                format!("{name}: {bad}: that kernel of the record replaced is not kept")
            });
            Old {
                records: Some(records),
                note,
            }
        }
        Err(why) => Old {
            records: None,
            note: Some(format!(
                "{why}: it was not a record, so none of it is kept in the one published"
            )),
        },
    }
}

/// Names in `new`'s `foreign` every key of the published record made on another device or Triton
/// than `new` names: a key this run decided where its shard made it (`new` says already), a
/// journaled key where its line says (else where DIR's sidecar says its keys were made), a key
/// kept from DIR's record where DIR's sidecar says (nothing known without one). So no sidecar
/// vouches for a key made elsewhere. Returns a line per place the kept keys were made.
fn provenance(
    new: &mut serde_json::Map<String, serde_json::Value>,
    union: &last_wins::LastWins,
    merged: &Records,
    journal: &Journal,
    old_sidecar: &Option<serde_json::Map<String, serde_json::Value>>,
    file: &Path,
) -> Vec<String> {
    use std::collections::{HashMap, HashSet};
    let plain = |text: &str| serde_json::from_str::<String>(text).ok();
    let this_run = meta::Provenance::of(new);
    let there = old_sidecar
        .as_ref()
        .map_or_else(meta::Provenance::unknown, meta::Provenance::of);
    let text = merged.text.as_str();
    let decided: HashSet<(&str, &str)> = merged
        .buckets
        .iter()
        .flat_map(|(kernel, keys)| {
            keys.iter()
                .map(move |(key, _)| (&text[kernel.clone()], &text[key.clone()]))
        })
        .collect();
    let mut journaled: HashMap<(String, String), meta::Made> = HashMap::new();
    for entry in &journal.entries {
        if let Some((kernel, key, _)) = &entry.seconds {
            let at = entry.made.clone().unwrap_or_else(|| there.own().clone());
            journaled.insert((kernel.clone(), key.clone()), at);
        }
    }
    let mut made: Vec<(String, String, meta::Made, bool)> = Vec::new();
    for (kernel_text, key_text) in union.keys() {
        let (Some(kernel), Some(key)) = (plain(kernel_text), plain(key_text)) else {
            continue;
        };
        let (at, kept) = if decided.contains(&(kernel_text, key_text)) {
            (this_run.made(&kernel, &key).clone(), false)
        } else if let Some(at) = journaled.get(&(kernel.clone(), key.clone())) {
            (at.clone(), true)
        } else {
            (there.made(&kernel, &key).clone(), true)
        };
        made.push((kernel, key, at, kept));
    }
    meta::set_foreign(
        new,
        made.iter()
            .map(|(k, key, at, _)| (k.as_str(), key.as_str(), at)),
    );
    let here = meta::own(new);
    let mut counts: Vec<(&meta::Made, usize)> = Vec::new();
    for (_, _, at, _) in made.iter().filter(|(_, _, at, kept)| *kept && *at != here) {
        match counts.iter_mut().find(|(m, _)| *m == at) {
            Some((_, n)) => *n += 1,
            None => counts.push((at, 1)),
        }
    }
    counts
        .into_iter()
        .map(|(at, n)| {
            format!(
                "{}: {n} key(s) kept from the record there were made on {}, not on {}: the \
                 published sidecar names them so (\"foreign\"), and a replay tunes them again on \
                 any other device or Triton",
                file.display(),
                meta::describe(at),
                meta::describe(&here)
            )
        })
        .collect()
}

/// A killed record session's journal in DIR: its entries, folded into the published record,
/// and the lock that keeps any session from starting until it is removed; or a live session's,
/// left alone.
struct Journal {
    path: PathBuf,
    entries: Vec<journal::Entry>,
    /// Held while the journal is folded and removed: no record session is live.
    dead: Option<nix::fcntl::Flock<std::fs::File>>,
}

impl Journal {
    fn find(dir: &Path, op: &str) -> Result<Journal> {
        let path = history::journal_path(dir, op);
        let none = |path| Journal {
            path,
            entries: Vec::new(),
            dead: None,
        };
        if path.symlink_metadata().is_err() {
            return Ok(none(path));
        }
        match journal::owner(dir, op)? {
            journal::Owner::Live => {
                eprintln!(
                    "{TOOL}: left {}: a record session is live in {} (it holds {}) and folds its \
                     keys into the published record itself",
                    path.display(),
                    dir.display(),
                    journal::sessions_path(dir, op).display()
                );
                Ok(none(path))
            }
            journal::Owner::Dead(held) => {
                let data = toolkit::file::read(&path).with_context(|| {
                    format!(
                        "reading {}, the unfolded keys of a killed record session; remove it \
                         by hand if it is not one",
                        path.display()
                    )
                })?;
                Ok(Journal {
                    entries: journal::entries(&data),
                    path,
                    dead: Some(held),
                })
            }
        }
    }

    /// Removes a dead session's journal, now in the published record; says so.
    fn finish(self) -> Result<String> {
        if self.dead.is_none() {
            return Ok(String::new());
        }
        let what = format!(
            "the unfolded keys of a killed record session ({} key(s), kept in the published \
             record)",
            self.entries.len()
        );
        remove_stale(
            &self.path,
            &what,
            "the replay pins them over the published record",
        )
    }
}

/// Forgets the op's costs in DIR (`DIR/<op>.costs.json`, "History in the record folder"): they
/// describe the run whose record this publish replaces, and `warmup-costs --record-dir` writes
/// this run's after it, where the run keeps costs (a by-key run keeps none). The file goes when
/// it held only the op's costs, else only the op's entry; said in the publish's line.
fn forget_costs(dir: &Path, op: &str) -> Result<String> {
    let path = history::costs_path(dir, op);
    if path.symlink_metadata().is_err() {
        return Ok(String::new());
    }
    let _lock = toolkit::lock::update_lock(TOOL, &path)?;
    let mut costs = match protocol::costs::CostFile::load(&path) {
        Ok(costs) => costs,
        Err(e) => {
            eprintln!(
                "{TOOL}: {e:#}: left as it is; remove it if it holds an earlier run's costs of \
                 op {op}, which the published sidecar does not describe"
            );
            return Ok(String::new());
        }
    };
    if !costs.clear(op) {
        return Ok(String::new());
    }
    let why = "the earlier run's costs, which the published sidecar does not describe";
    let is_link = path
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink());
    if costs.is_empty() && !is_link {
        return remove_stale(&path, why, "the next --predict mixes two runs");
    }
    costs.save()?;
    Ok(format!(
        "; removed op {op}'s costs from {}, {why}",
        path.display()
    ))
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
