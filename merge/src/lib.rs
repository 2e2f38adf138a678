//! `warmup-merge`: unions the shards' autotune records into one record file, byte for byte what
//! Python's `json.dumps(merged, indent=2, ensure_ascii=False) + "\n"` writes, and lists every key
//! whose winner differed between shards.

pub mod input;
pub mod union;

use anyhow::{bail, Context, Result};
use protocol::pyjson::{self, Value};
use protocol::Status;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

pub const TOOL: &str = "warmup-merge";

const EXAMPLES: &str = "EXAMPLES:
  warmup-merge /tmp/run -o merged.json --conflicts conflicts.json
  warmup-merge --in-scratch /tmp/run --summary -     # /tmp/run/merged.json, conflicts.json
  warmup-merge --op mm w0/rec/mm.json w1/rec/mm.json > merged.json
  warmup-merge --strict /tmp/run | warmup-publish --op mm -

An input that is missing, unreadable, torn or not {kernel: {key: config}} is named on stderr
and skipped, as the pytest plugin did; --strict makes that an error.";

/// Merge the shards' autotune records; the first value of a key wins, in input order.
#[derive(Debug, clap::Parser)]
#[command(name = TOOL, version, after_long_help = protocol::cli::after_help(EXAMPLES))]
pub struct Args {
    /// Op whose records to take from a SCRATCH folder [default: the plan's op]
    #[arg(long, env = protocol::env::CURRENT_OP)]
    pub op: Option<String>,

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
    /// atomically, as docs/CONTRACT.md "Run summaries" says; `-` is stdout
    #[arg(long, value_name = "FILE")]
    pub summary: Option<PathBuf>,

    /// Exit 2, writing nothing, when any input or bucket would be skipped
    #[arg(long)]
    pub strict: bool,

    /// Record files (<op>.json) and SCRATCH folders (their shards' w<i>/rec/<op>.json, in order)
    #[arg(value_name = "INPUT", required_unless_present = "in_scratch")]
    pub inputs: Vec<PathBuf>,
}

/// Where each output goes: `None` for one not asked for, `-` for stdout.
struct Targets {
    merged: PathBuf,
    conflicts: Option<PathBuf>,
    summary: Option<PathBuf>,
}

impl Targets {
    /// The targets the arguments ask for, checked before anything is read: at most one goes to
    /// stdout, every file's folder exists, and a summary can name every file.
    fn of(args: &Args) -> Result<Targets> {
        let targets = match &args.in_scratch {
            Some(scratch) => {
                let scratch = protocol::layout::Scratch::new(scratch);
                Targets {
                    merged: scratch.merged(),
                    conflicts: Some(scratch.conflicts()),
                    summary: args.summary.clone(),
                }
            }
            None => Targets {
                merged: args.output.clone().unwrap_or_else(|| PathBuf::from("-")),
                conflicts: args.conflicts.clone(),
                summary: args.summary.clone(),
            },
        };
        let all = [
            ("-o", Some(&targets.merged)),
            ("--conflicts", targets.conflicts.as_ref()),
            ("--summary", targets.summary.as_ref()),
        ];
        let to_stdout: Vec<&str> = all
            .iter()
            .filter(|(_, t)| t.is_some_and(|t| is_stdout(t)))
            .map(|(flag, _)| *flag)
            .collect();
        if to_stdout.len() > 1 {
            bail!(
                "{} all go to stdout: give all but one a FILE (-o FILE, or --in-scratch SCRATCH)",
                to_stdout.join(" and ")
            );
        }
        for (_, target) in all {
            if let Some(target) = target {
                check_writable_folder(target)?;
                if targets.summary.is_some() && !is_stdout(target) {
                    protocol::summary::check_path(target)?;
                }
            }
        }
        Ok(targets)
    }
}

fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

pub fn run(args: &Args) -> Result<Status> {
    let targets = Targets::of(args)?;
    let conflicts_out = targets.conflicts.as_deref();
    let op = args
        .op
        .as_deref()
        .map(str::trim)
        .filter(|op| !op.is_empty());
    let inputs = match (&args.in_scratch, args.inputs.is_empty()) {
        (Some(scratch), true) => std::slice::from_ref(scratch),
        _ => args.inputs.as_slice(),
    };
    let sources = input::sources(inputs, op)?;

    let mut merged = union::Union::new(sources.len());
    let (mut read, mut skipped, mut problems) = (0, 0, 0);
    // Reading and parsing (most of the work) runs one file ahead of the union, on a second thread.
    std::thread::scope(|scope| -> Result<Status> {
        let (tx, rx) = std::sync::mpsc::sync_channel(2);
        let reader_sources = &sources;
        scope.spawn(move || {
            for source in reader_sources {
                if tx.send(input::read(&source.path)).is_err() {
                    break;
                }
            }
        });
        for ((origin, source), outcome) in sources.iter().enumerate().zip(rx) {
            let record = match outcome {
                Ok(record) => record,
                Err(reason) => {
                    eprintln!(
                        "{TOOL}: {}; skipped{}",
                        located(&source.path, &reason),
                        clues(source)
                    );
                    skipped += 1;
                    problems += 1;
                    continue;
                }
            };
            read += 1;
            for (kernel, kind) in &record.bad_buckets {
                eprintln!(
                    "{TOOL}: {}: kernel {kernel:?} holds {kind}, not an object {{key: config}}; \
                 that kernel's entry skipped",
                    source.path.display()
                );
                problems += 1;
            }
            // The union borrows the texts until the output is written, right before the
            // process exits: leaking them spares both the bookkeeping and the frees.
            let text: &'static str = record.text.leak();
            for (kernel, keys) in record.buckets {
                merged.add(
                    origin,
                    &text[kernel],
                    keys.into_iter()
                        .map(|(key, config)| (&text[key], &text[config])),
                );
            }
        }
        if args.strict && problems > 0 {
            bail!("{problems} problem(s) in the inputs and --strict is set; nothing written");
        }
        let summary = format!(
            "{read} input(s) read, {skipped} skipped; {} kernel(s), {} config(s)",
            merged.kernels(),
            merged.configs()
        );
        let mut report = protocol::summary::Summary::new();
        report
            .value("inputs", sources.len())
            .value("recovered", read)
            .value("kernels", merged.kernels())
            .value("configs", merged.configs())
            .value("conflicts", merged.conflicts().len());
        if merged.configs() == 0 {
            if let Some(path) = &targets.summary {
                report.write(path)?;
            }
            eprintln!("{TOOL}: {summary}; no configs recovered, nothing written");
            return Ok(Status::NothingToDo);
        }

        let conflict_note = match (merged.conflicts().len(), conflicts_out) {
            (0, _) => "no conflicting keys".to_owned(),
            (n, Some(path)) => format!("{n} conflicting key(s), listed in {}", name(path)),
            (n, None) => format!("{n} conflicting key(s); list them with --conflicts FILE"),
        };
        emit(&targets.merged, |out| merged.write(out))?;
        if let Some(path) = conflicts_out {
            emit(path, |out| write_conflicts(out, &merged, &sources))?;
        }
        if let Some(path) = &targets.summary {
            let written = [
                ("merged", Some(targets.merged.as_path())),
                ("conflicts_file", conflicts_out),
            ];
            for (name, file) in written {
                if let Some(file) = file.filter(|f| !is_stdout(f)) {
                    report.path(name, &[], file)?;
                }
            }
            report.write(path)?;
        }
        // As with the texts: the process ends right after, and freeing the maps one entry at a
        // time would take longer than the OS takes to drop them whole.
        std::mem::forget(merged);
        eprintln!(
            "{TOOL}: {summary}; {conflict_note}; merged records in {}",
            name(&targets.merged)
        );
        Ok(Status::Done)
    })
}

/// `path:line:col: reason` for a JSON error (whose reason starts with `line:col: `), else
/// `path: reason`.
fn located(path: &Path, reason: &str) -> String {
    let positioned = reason
        .split_once(": ")
        .is_some_and(|(pos, _)| pos.split(':').all(|n| n.parse::<usize>().is_ok()));
    let sep = if positioned { ":" } else { ": " };
    format!("{}{sep}{reason}", path.display())
}

fn clues(source: &input::Source) -> String {
    match (&source.shard, &source.clues) {
        (Some(shard), Some((log, status))) => format!(
            " (shard {shard}: see {} and {})",
            log.display(),
            status.display()
        ),
        _ => String::new(),
    }
}

fn name(path: &Path) -> String {
    if is_stdout(path) {
        "stdout".into()
    } else {
        path.display().to_string()
    }
}

/// Fails before anything is written when a target's folder does not exist.
fn check_writable_folder(target: &Path) -> Result<()> {
    if is_stdout(target) {
        return Ok(());
    }
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        bail!(
            "{}: folder {} does not exist; create it first",
            target.display(),
            dir.display()
        );
    }
    if target.is_dir() {
        bail!("{}: is a folder; give a file name", target.display());
    }
    Ok(())
}

/// Writes to `target` (stdout, or a file atomically) what `fill` writes.
fn emit(target: &Path, fill: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<()> {
    if is_stdout(target) {
        let mut out = io::stdout().lock();
        fill(&mut out)
            .and_then(|()| out.flush())
            .context("writing to stdout")
    } else {
        protocol::atomic::write_with(target, |out| fill(out))
    }
}

/// The `--conflicts` list, one object per conflicting key, as
/// `json.dumps(conflicts, indent=2, ensure_ascii=False) + "\n"` writes it, straight from the
/// union's texts. A config's text is its `dumps` under kernel and key; here it sits one level
/// deeper (`kept.value`) or two (`differing[i].value`), and as `dumps` never leaves a raw newline
/// inside a string, going deeper only means indenting its lines further.
fn write_conflicts(
    out: &mut dyn Write,
    merged: &union::Union,
    sources: &[input::Source],
) -> std::io::Result<()> {
    let conflicts = merged.conflicts();
    if conflicts.is_empty() {
        return out.write_all(b"[]\n");
    }
    let string = |text: &str| {
        let mut json = pyjson::dumps(&Value::Str(text.to_owned()));
        json.pop(); // dumps ends with a newline
        json
    };
    // `{input, shard, value}` closing at indent 2 * depth.
    let origin = |out: &mut dyn Write, depth: usize, from: usize, config: &str| {
        let source = &sources[from];
        let pad = "  ".repeat(depth + 1);
        let shard = source
            .shard
            .map_or_else(|| "null".to_owned(), |s| s.to_string());
        let value = config.replace('\n', &format!("\n{}", "  ".repeat(depth - 1)));
        write!(
            out,
            "{{\n{pad}\"input\": {},\n{pad}\"shard\": {shard},\n{pad}\"value\": {value}\n{}}}",
            string(&source.path.to_string_lossy()),
            "  ".repeat(depth)
        )
    };
    for (n, c) in conflicts.iter().enumerate() {
        out.write_all(if n == 0 { b"[\n  {\n" } else { b",\n  {\n" })?;
        write!(
            out,
            "    \"kernel\": {},\n    \"key\": {},\n    \"kept\": ",
            string(&input::name(c.kernel)),
            string(&input::name(c.key))
        )?;
        origin(out, 2, c.kept.0, c.kept.1)?;
        out.write_all(b",\n    \"differing\": [")?;
        for (m, (from, config)) in c.differing.iter().enumerate() {
            out.write_all(if m == 0 { b"\n      " } else { b",\n      " })?;
            origin(out, 3, *from, config)?;
        }
        out.write_all(b"\n    ]\n  }")?;
    }
    out.write_all(b"\n]\n")
}
