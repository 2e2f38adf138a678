//! `warmup-merge`: unions the shards' autotune records into one record file, byte for byte what
//! Python's `json.dumps(merged, indent=2, ensure_ascii=False) + "\n"` writes, and lists every key
//! whose winner differed between shards.

pub mod first_wins;
pub mod input;
pub mod output;

use anyhow::{bail, Result};
use protocol::layout::Scratch;
use protocol::op::OpArg;
use protocol::records::{Counts, Records, Unreadable};
use protocol::status::Outcome;
use protocol::summary::{MergeSummary, ShardLine};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use toolkit::Status;

pub const TOOL: &str = "warmup-merge";

const EXAMPLES: &str = "EXAMPLES:
  warmup-merge /tmp/run -o merged.json --conflicts conflicts.json
  warmup-merge --in-scratch /tmp/run --summary -     # /tmp/run/merged.json, conflicts.json
  warmup-merge --op mm w0/rec/mm.json w1/rec/mm.json > merged.json
  warmup-merge --strict /tmp/run | warmup-publish --op mm -

An input that is missing, unreadable, torn or not {kernel: {key: config}} is named on stderr
and skipped, as the pytest plugin did; --strict makes that an error.";

/// This tool's exit statuses (docs/CONTRACT.md, "Exit statuses").
const EXIT_STATUS: [(&str, &str); 3] = [
    (
        "0",
        "done: the merged record (and the conflict list) written",
    ),
    toolkit::USAGE_ROW,
    (
        "3",
        "nothing to do: no configs were recovered from the inputs; nothing written",
    ),
];

/// Merge the shards' autotune records; the first value of a key wins, in input order.
#[derive(Debug, clap::Parser)]
#[command(name = TOOL, version, after_long_help = toolkit::cli::after_help(EXAMPLES, &toolkit::exit_status_help(&EXIT_STATUS)))]
pub struct Args {
    #[command(flatten)]
    pub op: OpArg,

    /// Write the merged records to FILE, atomically; `-` is stdout [default: -]
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        conflicts_with = "in_scratch"
    )]
    pub output: Option<PathBuf>,

    /// Write every conflicting key (kernel, key, kept value, differing values) as JSON to FILE
    #[arg(long, value_name = "FILE", conflicts_with = "in_scratch")]
    pub conflicts: Option<PathBuf>,

    /// Write SCRATCH/merged.json and SCRATCH/conflicts.json instead of -o and --conflicts;
    /// INPUT defaults to SCRATCH
    #[arg(long, value_name = "SCRATCH")]
    pub in_scratch: Option<PathBuf>,

    /// Write the run summary (inputs, kernels, configs, conflicts, files written) to FILE,
    /// atomically, as the contract's "Run summaries" says (SEE ALSO); `-` is stdout
    #[arg(long, value_name = "FILE")]
    pub summary: Option<PathBuf>,

    /// Exit 2, writing nothing, when any input or bucket would be skipped
    #[arg(long)]
    pub strict: bool,

    /// Record files (<op>.json) and SCRATCH folders (their shards' w<i>/rec/<op>.json, in order)
    #[arg(value_name = "INPUT", required_unless_present = "in_scratch")]
    pub inputs: Vec<PathBuf>,
}

pub fn run(args: &Args) -> Result<Status> {
    let in_scratch = args.in_scratch.as_deref().map(Scratch::new);
    let targets = output::Targets::new(
        args.output.as_deref(),
        args.conflicts.as_deref(),
        args.summary.as_deref(),
        in_scratch.as_ref(),
    )?;
    let mut locks = input::Locks::default();
    if let Some(scratch) = &in_scratch {
        locks.take(scratch)?;
    }
    let inputs = match (&args.in_scratch, args.inputs.is_empty()) {
        (Some(scratch), true) => std::slice::from_ref(scratch),
        _ => args.inputs.as_slice(),
    };
    let sources = input::sources(inputs, &args.op, &mut locks)?;

    // The records' owner: the union borrows their texts until the outputs are written.
    let records: Vec<OnceLock<Result<Records, Unreadable>>> =
        sources.iter().map(|_| OnceLock::new()).collect();
    let Merged {
        union: merged,
        read,
        problems,
    } = merge(&sources, &records);
    if args.strict && problems > 0 {
        bail!("{problems} problem(s) in the inputs and --strict is set; nothing written");
    }
    let counts = Counts {
        kernels: merged.kernels(),
        configs: merged.configs(),
    };
    let skipped = sources.len() - read;
    let said = format!("{read} input(s) read, {skipped} skipped; {counts}");
    let mut summary = MergeSummary {
        inputs: sources.len(),
        recovered: read,
        kernels: counts.kernels,
        configs: counts.configs,
        conflicts: merged.conflicts().len(),
        ..MergeSummary::default()
    };
    // Declared before the outputs, which borrow it until they are committed.
    let text;
    let mut outputs = output::Outputs::default();
    if counts.configs == 0 {
        if let Some(target) = &targets.summary {
            summary.shards = shard_lines(&sources);
            text = summary.to_summary()?;
            outputs.add(target, |out| out.write_all(text.bytes()))?;
        }
        outputs.commit()?;
        eprintln!("{TOOL}: {said}; no configs recovered, nothing written");
        return Ok(Status::NothingToDo);
    }

    outputs.add(&targets.merged, |out| merged.write(out))?;
    if let Some(target) = &targets.conflicts {
        outputs.add(target, |out| merged.write_conflicts(out, &sources))?;
    }
    if let Some(target) = &targets.summary {
        summary.merged = targets.merged.file().map(Path::to_path_buf);
        summary.conflicts_file = targets
            .conflicts
            .as_ref()
            .and_then(output::Target::file)
            .map(Path::to_path_buf);
        summary.shards = shard_lines(&sources);
        text = summary.to_summary()?;
        outputs.add(target, |out| out.write_all(text.bytes()))?;
    }
    outputs.commit()?;
    let conflict_note = match (merged.conflicts().len(), &targets.conflicts) {
        (0, _) => "no conflicting keys".to_owned(),
        (n, Some(target)) => format!("{n} conflicting key(s), listed in {}", target.name()),
        (n, None) => format!("{n} conflicting key(s); list them with --conflicts FILE"),
    };
    eprintln!(
        "{TOOL}: {said}; {conflict_note}; merged records in {}",
        targets.merged.name()
    );
    Ok(Status::Done)
}

/// One `shard INDEX OUTCOME LOG` line per shard of each SCRATCH input, its outcome judged from
/// its status.json by the one rule every run summary uses ([`Outcome`]): what a script that
/// finishes a run (warmup-slurm's finishing job) reports and re-runs by, from this one summary.
/// A status file that cannot be read counts as `failed`, with a line.
fn shard_lines(sources: &[input::Source]) -> Vec<ShardLine> {
    let mut lines = Vec::new();
    for source in sources {
        let (Some(shard), Some((log, status))) = (source.shard, &source.clues) else {
            continue;
        };
        let outcome = Outcome::at(status).unwrap_or_else(|e| {
            eprintln!("{TOOL}: {e:#}; shard {shard} counted as failed");
            Outcome::Failed
        });
        lines.push(ShardLine {
            index: shard,
            outcome,
            log: log.clone(),
        });
    }
    lines
}

/// The first-wins union of the inputs' records, and how reading them went.
struct Merged<'r> {
    union: first_wins::FirstWins<'r>,
    /// Inputs read as record files.
    read: usize,
    /// Inputs skipped and buckets set aside, each named on stderr.
    problems: usize,
}

/// Reads every source into its slot of `records` and adds it to the union. Reading and parsing
/// (most of the work) runs one file ahead of the union, on a second thread.
fn merge<'r>(
    sources: &[input::Source],
    records: &'r [OnceLock<Result<Records, Unreadable>>],
) -> Merged<'r> {
    let (stale, notes) = input::stale_kernels(sources);
    for note in notes {
        eprintln!("{TOOL}: {note}");
    }
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel(2);
        scope.spawn(move || {
            for (slot, source) in records.iter().zip(sources) {
                let _ = slot.set(input::read(&source.path));
                if tx.send(()).is_err() {
                    break;
                }
            }
        });
        let mut merged = Merged {
            union: first_wins::FirstWins::new(sources.len()),
            read: 0,
            problems: 0,
        };
        for ((origin, source), ()) in sources.iter().enumerate().zip(rx) {
            let name = source.path.display().to_string();
            match records[origin].get() {
                Some(Ok(record)) => {
                    merged.read += 1;
                    for bad in &record.bad_buckets {
                        eprintln!("{TOOL}: {name}: {bad}; that kernel's entry skipped");
                        merged.problems += 1;
                    }
                    merged
                        .union
                        .add_records_except(origin, record, &stale[origin]);
                }
                Some(Err(why)) => {
                    eprintln!(
                        "{TOOL}: {}; skipped{}",
                        source.unusable(why),
                        source.clues()
                    );
                    merged.problems += 1;
                }
                None => {}
            }
        }
        merged
    })
}
