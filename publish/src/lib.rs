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

    /// Folder to publish into; blank is none [default: $FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR when not
    /// blank]
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

/// The publish, as steps that hand each other typed values: MERGED read ([`Input`]), where it
/// goes ([`Target`]) and the shards' sidecars combined, what DIR held ([`Existing`]), the record
/// that keeps it ([`NewRecord`]), written, then said ([`report`]).
pub fn run(args: &Args) -> Result<Status> {
    let Some(input) = Input::read(args)? else {
        return Ok(Status::NothingToDo);
    };
    let target = Target::of(args)?;
    let new_sidecar = shards_sidecar(input.scratch.as_ref(), target.op)?;
    std::fs::create_dir_all(&target.dir)
        .with_context(|| format!("creating record folder {}", target.dir.display()))?;
    // The lock every record session of the op holds while it adds a key: the record is not
    // replaced under a session folding its journal into it, nor the journal removed mid-append;
    // and two publishes into the folder take turns, each adding to what the other published.
    let _record_lock =
        toolkit::lock::update_lock(TOOL, &history::record_lock_target(&target.dir, target.op))?;
    let existing = Existing::find(&target, new_sidecar.as_ref())?;
    let record = NewRecord::of(&input.merged, &existing);
    let wrote = match new_sidecar {
        Some(new) => write_with_sidecar(args, &target, new, &input.merged, &existing, &record)?,
        None => write_alone(&target, &input.merged, &record)?,
    };
    let wrote = existing.forgot + &wrote + &existing.journal.finish()?;
    report(&target, &input.merged, &record, &wrote, existing.old.note)
}

/// MERGED, read and checked, and the SCRATCH folder it is the merged record of, where it was one.
struct Input {
    merged: record::Merged,
    scratch: Option<Scratch>,
}

impl Input {
    /// None, said, where MERGED holds no configs: nothing to publish.
    fn read(args: &Args) -> Result<Option<Input>> {
        let op = args.op.name();
        if let Some(why) = protocol::op::file_name_problem(op) {
            bail!("op {op:?} cannot be a file name ({why}); give --op a plain name such as mm");
        }
        let scratch = args.merged.is_dir().then(|| Scratch::new(&args.merged));
        let source = scratch
            .as_ref()
            .map_or_else(|| args.merged.clone(), Scratch::merged);
        let merged = record::read(&source)?;
        if merged.counts.configs == 0 {
            eprintln!(
                "{TOOL}: {}: no configs ({}); nothing written",
                merged.name, merged.counts
            );
            return Ok(None);
        }
        Ok(Some(Input { merged, scratch }))
    }
}

/// Where the record goes, and the replay environment that points at it.
struct Target<'a> {
    op: &'a str,
    /// DIR, absolute.
    dir: PathBuf,
    /// `DIR/<op>.json`.
    file: PathBuf,
    /// `DIR/<op>.meta.json`.
    sidecar: PathBuf,
    /// The environment change, as `--format` prints it.
    env: Vec<u8>,
}

impl<'a> Target<'a> {
    fn of(args: &'a Args) -> Result<Target<'a>> {
        let op = args.op.name();
        let dir = absolute_record_dir(args)?;
        let file = protocol::layout::record_file(&dir, op);
        // Rendered first: a path the format cannot carry must fail before anything is written.
        let env = replay::render(args.format, &dir, args.op.given(), &file)?;
        Ok(Target {
            op,
            sidecar: history::meta_path(&dir, op),
            dir,
            file,
            env,
        })
    }
}

/// The shards' sidecars combined, from SCRATCH (none from a file), its notes said.
fn shards_sidecar(
    scratch: Option<&Scratch>,
    op: &str,
) -> Result<Option<serde_json::Map<String, serde_json::Value>>> {
    let combined = match scratch {
        Some(scratch) => meta::combine(scratch, op)?,
        None => meta::Combined::default(),
    };
    for note in &combined.notes {
        eprintln!("{TOOL}: {note}");
    }
    Ok(combined.sidecar)
}

/// What DIR held for the op before this publish, which the published record keeps.
struct Existing {
    /// What forgetting the op's costs did, said in the publish's line.
    forgot: String,
    journal: Journal,
    old: Old,
    sidecar: Option<serde_json::Map<String, serde_json::Value>>,
    /// The kernels changed since DIR's record was made, whose old keys are not kept.
    changed: Vec<String>,
}

impl Existing {
    /// Reads DIR under the record lock, forgetting the op's costs there first; says which
    /// kernels changed. `new`: the published sidecar, whose fingerprints say that.
    fn find(
        target: &Target<'_>,
        new: Option<&serde_json::Map<String, serde_json::Value>>,
    ) -> Result<Existing> {
        // First, so that a publish cut short leaves a record and sidecar without costs (no usable
        // history) rather than a new sidecar beside another run's costs.
        let forgot = forget_costs(&target.dir, target.op)?;
        let journal = Journal::find(&target.dir, target.op)?;
        let old = old_record(&target.file);
        let sidecar = meta::load(&target.sidecar);
        // A kernel whose source or configs changed since DIR's record was made: its old keys were
        // decided for another kernel, and the new sidecar's fingerprint would vouch for them.
        let changed = match (&sidecar, new) {
            (Some(old), Some(new)) => meta::changed_kernels(old, new),
            _ => Vec::new(),
        };
        for kernel in &changed {
            eprintln!(
                "{TOOL}: kernel {kernel} changed since {} was recorded (its fingerprint differs): \
                 its keys there are not kept",
                target.file.display()
            );
        }
        Ok(Existing {
            forgot,
            journal,
            old,
            sidecar,
            changed,
        })
    }

    fn still_same(&self, kernel: &str) -> bool {
        !self.changed.iter().any(|c| c == kernel)
    }
}

/// The record published: DIR's record, then the journal's keys, then MERGED's, a key's last
/// value winning (a changed kernel's old keys left out).
struct NewRecord {
    union: last_wins::LastWins,
    counts: Counts,
    /// The configs kept from DIR that MERGED does not have.
    kept: usize,
    /// Whether it is MERGED as it is, whose bytes are then written as given.
    unchanged: bool,
}

impl NewRecord {
    fn of(merged: &record::Merged, existing: &Existing) -> NewRecord {
        let skip: Vec<String> = existing
            .changed
            .iter()
            .map(|k| serde_json::Value::from(k.as_str()).to_string())
            .collect();
        let mut union = last_wins::LastWins::default();
        if let Some(old) = &existing.old.records {
            union.update_except(old, &skip);
        }
        for entry in &existing.journal.entries {
            union.update_except(&entry.record, &skip);
        }
        union.update(&merged.records);
        let kept = union.configs() - merged.counts.configs;
        NewRecord {
            unchanged: kept == 0 && union.kernels() == merged.counts.kernels,
            counts: Counts {
                kernels: union.kernels(),
                configs: union.configs(),
            },
            kept,
            union,
        }
    }

    fn bytes<'a>(&self, merged: &'a record::Merged) -> std::borrow::Cow<'a, [u8]> {
        if self.unchanged {
            std::borrow::Cow::Borrowed(&merged.bytes)
        } else {
            std::borrow::Cow::Owned(self.union.to_bytes())
        }
    }
}

/// Writes the record and, beside it, the shards' sidecar `new` with what DIR's sidecar and
/// journal say of the keys kept; says so, for the publish's line.
fn write_with_sidecar(
    args: &Args,
    target: &Target<'_>,
    mut new: serde_json::Map<String, serde_json::Value>,
    merged: &record::Merged,
    existing: &Existing,
    record: &NewRecord,
) -> Result<String> {
    keep_seconds_there(&mut new, existing);
    let notes = provenance(
        &mut new,
        &record.union,
        &merged.records,
        existing,
        &target.file,
    );
    for note in notes {
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
    let bytes = record.bytes(merged);
    toolkit::atomic::commit_all([
        toolkit::atomic::stage(&target.file, |out| out.write_all(&bytes))?,
        toolkit::atomic::stage(&target.sidecar, |out| out.write_all(&text))?,
    ])?;
    Ok(format!(
        ", the shards' versions and device to {}",
        target.sidecar.display()
    ))
}

/// The seconds of every key kept: the journal's (its last line for a key first), then the
/// sidecar's there; a key the shards have keeps the shards' figure. And DIR's fingerprints of
/// the kernels kept that the shards' sidecars do not name.
fn keep_seconds_there(new: &mut serde_json::Map<String, serde_json::Value>, existing: &Existing) {
    let journaled: Vec<(&str, &str, &serde_json::Value)> = existing
        .journal
        .entries
        .iter()
        .rev()
        .filter_map(|e| e.seconds.as_ref())
        .map(|(kernel, key, seconds)| (kernel.as_str(), key.as_str(), seconds))
        .filter(|(kernel, _, _)| existing.still_same(kernel))
        .collect();
    meta::keep_tune_seconds(new, journaled);
    if let Some(old) = &existing.sidecar {
        let mut entries = meta::tune_entries(old);
        entries.retain(|(kernel, _, _)| existing.still_same(kernel));
        meta::keep_tune_seconds(new, entries);
        meta::keep_fingerprints(new, old);
    }
}

/// Writes the record with no sidecar, removing DIR's: the replay would check the new configs
/// against another record's versions and device. Says so, for the publish's line.
fn write_alone(target: &Target<'_>, merged: &record::Merged, record: &NewRecord) -> Result<String> {
    toolkit::atomic::write(&target.file, &record.bytes(merged))?;
    remove_stale(
        &target.sidecar,
        "which described the record it replaced",
        "the replay checks the new configs against it",
    )
}

/// Prints the replay environment, then says what was written (`wrote`: besides the record) and
/// `note`, what of DIR's record could not be kept.
fn report(
    target: &Target<'_>,
    merged: &record::Merged,
    record: &NewRecord,
    wrote: &str,
    note: Option<String>,
) -> Result<Status> {
    let mut out = std::io::stdout().lock();
    out.write_all(&target.env)
        .and_then(|()| out.flush())
        .context("writing to stdout")?;
    let kept = match record.kept {
        0 => String::new(),
        n => format!(
            " ({} from this run, {n} key(s) kept from the record there, which this run did not \
             decide)",
            merged.counts
        ),
    };
    eprintln!(
        "{TOOL}: wrote {}{kept} to {}{wrote}",
        record.counts,
        target.file.display()
    );
    if let Some(note) = note {
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
    existing: &Existing,
    file: &Path,
) -> Vec<String> {
    use std::collections::{HashMap, HashSet};
    let plain = |text: &str| serde_json::from_str::<String>(text).ok();
    let this_run = meta::Provenance::of(new);
    let there = existing
        .sidecar
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
    for entry in &existing.journal.entries {
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
        match protocol::session::sessions(dir, op)? {
            protocol::session::Sessions::Live => {
                eprintln!(
                    "{TOOL}: left {}: a record session is live in {} (it holds {}) and folds its \
                     keys into the published record itself",
                    path.display(),
                    dir.display(),
                    journal::sessions_path(dir, op).display()
                );
                Ok(none(path))
            }
            protocol::session::Sessions::Idle(held) => {
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

/// The record folder, as warmup-spawn reads it (`protocol::env::record_folder`: `--record-dir`,
/// blank is none, else the harness's record variable), else `--fallback-dir`.
fn record_dir(args: &Args) -> Result<PathBuf> {
    let flag = args.record_dir.as_deref().map(std::path::Path::as_os_str);
    if let Some(dir) = protocol::env::record_folder(flag, std::env::var_os(RECORD_DIR).as_deref()) {
        return Ok(dir);
    }
    match &args.fallback_dir {
        Some(dir) => Ok(dir.clone()),
        None => bail!(
            "no record folder: give --record-dir DIR, set {RECORD_DIR}, or give --fallback-dir DIR"
        ),
    }
}
