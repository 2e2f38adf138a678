//! The low args: every option of scripts/warmup and scripts/warmup-slurm, as clap parses them,
//! so that a typo or a bad value is the parser's usage error (exit 2) before anything runs, and
//! the drivers' `--help`, man pages and completions are generated from the same definitions.
//! Nothing here reads a file or the environment but what clap itself reads.

use clap::builder::PossibleValuesParser;
use clap::{CommandFactory, ValueEnum};
use std::ffi::OsString;
use std::path::PathBuf;

/// warmup-plan's name, which its own lines start with.
pub const TOOL: &str = "warmup-plan";

/// Which driver's options follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Driver {
    Warmup,
    #[value(name = "warmup-slurm")]
    Slurm,
}

impl Driver {
    pub fn name(self) -> &'static str {
        match self {
            Driver::Warmup => "warmup",
            Driver::Slurm => "warmup-slurm",
        }
    }

    /// The driver's command line, for its help, man page and completions.
    pub fn command(self) -> clap::Command {
        match self {
            Driver::Warmup => Warmup::command(),
            Driver::Slurm => Slurm::command(),
        }
    }
}

const WARMUP_ABOUT: &str = "\
Sweeps the autotune configs of COMMAND on many GPUs at once, then runs COMMAND once, replaying them.

Splits the shapes of COMMAND's --shape_file over N devices, runs one pinned copy of COMMAND per
shard to sweep the autotune configs, merges the winners, publishes them, then runs COMMAND once
with the replay environment so that the measurement runs serially on one device, unswept. A
pytest COMMAND starts with the sweep, with -p warmup_harness, so that its start-up and collection
overlap the sweep; the harness holds it before its first test until the configs are published.

Where the harness is in COMMAND's Python, a record folder (FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR, else
the record cache, which every later run reads) that already holds the op's record for this Triton
and GPU model is reused by one run of COMMAND (no sweep, nothing it holds tuned again), and one device is one process
recording there. Whenever the warmup does not apply or cannot help, it says why on stderr and
runs COMMAND unchanged.";

const WARMUP_AFTER: &str = "\
ENVIRONMENT:
  FLAGGEMS_PERF_CURRENT_OP           the op [default: COMMAND's single -m NAME, else (no
                                     --shape_file) its test file's stem less test_, else \"default\"]
  PARALLEL_WARMUP_GPUS               the GPU count when --gpus is not given
  FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR  the record folder: where the merged configs are published,
                                     and the op's history and record, compared with the Triton
                                     version COMMAND's Python has installed and the GPU model;
                                     unset, the record cache (warmup-cache path shows it)
  XDG_CACHE_HOME, HOME               where the record cache is: $XDG_CACHE_HOME/parallel-warmup/
                                     records, else ~/.cache/parallel-warmup/records
  TRITON_CACHE_DIR                   the compile cache the sweep children share
  WARMUP_BIN_DIR                     where the warmup-* tools are (else beside this script,
                                     target/release, PATH)

EXAMPLES:
  warmup -- pytest benchmark/test_mm.py               # op mm; every GPU, by key (no shape file)
  warmup --gpus 1 -- pytest benchmark/test_mm.py      # one process, recording with compile-ahead
  warmup --gpus 8 --entry BlasBenchmark -- pytest benchmark/test_mm.py --level core \\
        --shape_file benchmark/core_shapes.yaml       # its shapes split over 8 GPUs
  (FlagGems 5.0: benchmark/test_blas_perf.py -m mm in place of benchmark/test_mm.py)

EXIT STATUS:
  COMMAND's (warmup ends by running it, or by waiting for the measurement it started with the
  sweep); 2 on a usage error or a scratch in use; 127 when COMMAND cannot be found; 128+N (130
  for SIGINT, 143 for SIGTERM) when the sweep was stopped by signal N before COMMAND ran a test.";

/// scripts/warmup's options.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "warmup",
    about = "Sweep the autotune configs on many GPUs at once, then run COMMAND once, replaying them",
    long_about = WARMUP_ABOUT,
    after_long_help = WARMUP_AFTER,
    version,
    args_override_self = true
)]
pub struct Warmup {
    /// Devices to sweep on [default: $PARALLEL_WARMUP_GPUS, else every visible device where the
    /// harness runs in COMMAND; unset without it, or below 2: no sweep]
    #[arg(long, value_name = "N", value_parser = toolkit::cli::whole_number, allow_negative_numbers = true)]
    pub gpus: Option<u64>,
    /// Comma-separated device tokens [default: the backend's visibility variable, else every
    /// device the backend finds]; a token listed twice runs two sweep children on that device
    #[arg(long, value_name = "LIST", value_parser = protocol::backend::list_arg)]
    pub devices: Option<String>,
    #[command(flatten)]
    pub split: Split,
    #[command(flatten)]
    pub spawn: SpawnOptions,
    /// Where the shards, logs and records go [default: a new folder under $TMPDIR]; kept on
    /// failure, removed on success unless --keep or the configs live there; one run at a time
    #[arg(long, value_name = "DIR", value_parser = toolkit::cli::folder())]
    pub scratch: Option<PathBuf>,
    /// Keep the scratch folder
    #[arg(long)]
    pub keep: bool,
    /// Sweep even where the op's history in the record folder predicts that the warmup saves
    /// less than 10%, which otherwise runs COMMAND plain
    #[arg(long)]
    pub always: bool,
    /// Split no shape file: each device's child runs COMMAND whole and claims each autotune key
    /// it meets first, so a key is tuned once; no history, no prediction (the default where the
    /// harness runs and COMMAND names no --shape_file, on 2 or more devices)
    #[arg(long, conflicts_with_all = ["entry", "strategy", "costs", "cost_model", "overhead"])]
    pub by_key: bool,
    /// Tune every key again; by default a key the record folder's record holds (same Triton,
    /// same device model) is not tuned again
    #[arg(long)]
    pub fresh: bool,
    /// Race each swept key's configs, the harness's default: time each briefly, then in full only
    /// those the short timing's measured noise cannot rule out (WARMUP_HARNESS_RACE=1 in
    /// COMMAND's environment, over what the environment holds)
    #[arg(long, overrides_with = "no_race")]
    pub race: bool,
    /// Time every config of a swept key in full, as the tuner does alone (WARMUP_HARNESS_RACE=0)
    #[arg(long, overrides_with = "race")]
    pub no_race: bool,
    /// The benchmark command, after --
    #[arg(value_name = "COMMAND", last = true, required = true)]
    pub command: Vec<OsString>,
}

const SLURM_ABOUT: &str = "\
Sweeps the autotune configs of COMMAND's --shape_file as a Slurm job array.

Splits the op's shapes into N shards in DIR, submits one array task per shard (each runs COMMAND
once on its own GPU, through warmup-spawn), and a job that runs when the array is done: it merges
the shards' configs, publishes them and names the shards that failed. DIR, the warmup-* tools and
COMMAND must be reachable at the same paths from every node: put them on a shared filesystem.

  warmup-slurm --scratch DIR --shards N [OPTIONS] -- COMMAND [ARG...]
  warmup-slurm --rerun LIST --scratch DIR [--wait]
  warmup-slurm --finish --scratch DIR";

const SLURM_AFTER: &str = "\
STDOUT:
  \"array JOBID\" and \"finish JOBID\" when submitting; the replay environment (sh lines) from
  --finish. Slurm's own output files: DIR/slurm/.

EXAMPLES:
  warmup-slurm --scratch /shared/$USER/warmup-mm --shards 16 --partition gpu --time 2:00:00 \\
      --op mm --entry BlasBenchmark -- pytest benchmark/test_mm.py --level core \\
        --shape_file benchmark/core_shapes.yaml
  (FlagGems 5.0: benchmark/test_blas_perf.py -m mm in place of benchmark/test_mm.py)

EXIT STATUS:
  0 submitted (with --wait or --finish: every shard finished); 1 some shards failed (their
  configs are swept live in the measurement); 2 usage error or refused; 3 nothing to do (fewer
  than 2 shapes, no configs recovered).";

/// scripts/warmup-slurm's options.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "warmup-slurm",
    about = "Sweep the autotune configs as a Slurm job array, one shard per task, on a shared scratch",
    long_about = SLURM_ABOUT,
    after_long_help = SLURM_AFTER,
    version,
    args_override_self = true
)]
pub struct Slurm {
    /// The run's folder, on a filesystem every node sees
    #[arg(long, value_name = "DIR", value_parser = toolkit::cli::folder())]
    pub scratch: Option<PathBuf>,
    /// How many shards, hence array tasks (at least 2, at most the op's shape count)
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub shards: Option<String>,
    /// The op [default: $FLAGGEMS_PERF_CURRENT_OP, else as warmup names it from COMMAND (-m
    /// NAME, the test file's stem), else "default"; --rerun and --finish: the submitted plan's]
    #[arg(long, value_name = "OP")]
    pub op: Option<String>,
    #[command(flatten)]
    pub split: Split,
    /// sbatch --partition, for the array and the finishing job
    #[arg(long, value_name = "NAME")]
    pub partition: Option<String>,
    /// GPUs each task asks for as --gres=gpu:N (0: no gres)
    #[arg(long, value_name = "N", value_parser = toolkit::cli::whole_number, default_value_t = 1, allow_negative_numbers = true)]
    pub gpus_per_task: u64,
    /// sbatch --time for each array task (the finishing job gets 10 minutes)
    #[arg(long, value_name = "LIMIT")]
    pub time: Option<String>,
    /// At most N tasks at once (--array=0-(k-1)%N)
    #[arg(long, value_name = "N", value_parser = toolkit::cli::at_least_one, allow_negative_numbers = true)]
    pub max_parallel: Option<u64>,
    /// One more sbatch option for both jobs, e.g. --sbatch-arg=--account=proj; repeat for more
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    pub sbatch_arg: Vec<String>,
    /// Where the merged configs are published [default: $FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR,
    /// else DIR/merged in the scratch]
    #[arg(long, value_name = "DIR")]
    pub record_dir: Option<PathBuf>,
    #[command(flatten)]
    pub spawn: SpawnOptions,
    /// Wait for the finishing job and exit with its status
    #[arg(long)]
    pub wait: bool,
    /// Submit these shards again (e.g. 2 or 1,4-5) and a new finishing job; only their outputs
    /// are replaced
    #[arg(long, value_name = "LIST", conflicts_with = "finish")]
    pub rerun: Option<String>,
    /// Merge, publish, report (what the finishing job runs; also by hand)
    #[arg(long)]
    pub finish: bool,
    /// The benchmark command, after -- (submitting only)
    #[arg(value_name = "COMMAND", last = true)]
    pub command: Vec<OsString>,
}

/// The options that choose the split, passed on to warmup-shard unchanged.
#[derive(Debug, Clone, clap::Args)]
pub struct Split {
    /// The shape file's key that holds the op's shapes [default: the op]
    #[arg(long, value_name = "KEY")]
    pub entry: Option<String>,
    /// How shapes go to devices or tasks: lpt (largest expected cost first onto the least-loaded
    /// one, by the op's history, --costs or --cost-model) or round-robin (the plugin's split)
    /// [default: lpt]
    #[arg(long, value_name = "NAME", value_parser = PossibleValuesParser::new(["round-robin", "lpt"]))]
    pub strategy: Option<String>,
    /// Expected seconds per shape for lpt, as warmup-costs writes them from a kept scratch
    #[arg(long, value_name = "FILE")]
    pub costs: Option<PathBuf>,
    /// Lpt's costs without a cost file [default: robust]
    #[arg(long, value_name = "M", value_parser = PossibleValuesParser::new(["robust", "product", "uniform"]))]
    pub cost_model: Option<String>,
    /// The product model's fixed cost per shape [default: 1]
    #[arg(long, value_name = "X", value_parser = toolkit::cli::non_negative, allow_negative_numbers = true)]
    pub overhead: Option<f64>,
}

impl Split {
    /// As warmup-shard takes them.
    pub fn argv(&self) -> Vec<OsString> {
        let mut out = Vec::new();
        for (flag, value) in [
            ("--entry", self.entry.clone()),
            ("--strategy", self.strategy.clone()),
            ("--cost-model", self.cost_model.clone()),
        ] {
            if let Some(v) = value {
                out.extend([OsString::from(flag), OsString::from(v)]);
            }
        }
        if let Some(c) = &self.costs {
            out.extend(["--costs".into(), c.clone().into_os_string()]);
        }
        if let Some(x) = self.overhead {
            out.push(OsString::from(format!("--overhead={x}")));
        }
        out
    }
}

/// The options passed on to warmup-spawn unchanged.
#[derive(Debug, Clone, clap::Args)]
pub struct SpawnOptions {
    /// cuda, rocm, ascend, ... or a FlagGems vendor name [default: auto; a Slurm task: from its
    /// visibility variable]
    #[arg(long, value_name = "NAME", value_parser = backend_name)]
    pub backend: Option<String>,
    /// Stop a sweep child that runs longer
    #[arg(long, value_name = "SECS", value_parser = seconds_text, allow_negative_numbers = true)]
    pub timeout: Option<String>,
    /// How long a stopped child gets between SIGTERM and SIGKILL [default: 10]
    #[arg(long, value_name = "SECS", value_parser = seconds_text, allow_negative_numbers = true)]
    pub grace: Option<String>,
    /// Keep at most SIZE of each sweep child's log, e.g. 200M [default: all]
    #[arg(long, value_name = "SIZE", value_parser = size_text, allow_negative_numbers = true)]
    pub max_log: Option<String>,
    /// A Triton cache per sweep child, in the scratch, as the pytest plugin did [default: the
    /// children share your TRITON_CACHE_DIR]
    #[arg(long)]
    pub cache_per_child: bool,
}

impl SpawnOptions {
    /// As warmup-spawn takes them.
    pub fn argv(&self) -> Vec<OsString> {
        let mut out = Vec::new();
        for (flag, value) in [
            ("--backend", &self.backend),
            ("--timeout", &self.timeout),
            ("--grace", &self.grace),
            ("--max-log", &self.max_log),
        ] {
            if let Some(v) = value {
                out.push(OsString::from(format!("{flag}={v}")));
            }
        }
        if self.cache_per_child {
            out.push("--cache-per-child".into());
        }
        out
    }
}

fn backend_name(text: &str) -> Result<String, String> {
    if text.trim() == "auto" {
        return Ok(text.to_owned());
    }
    let none = protocol::backend::Environment::default();
    protocol::backend::select(text, &none)
        .map(|_| text.to_owned())
        .map_err(|e| format!("{e:#}"))
}

fn seconds_text(text: &str) -> Result<String, String> {
    toolkit::cli::seconds(text).map(|_| text.to_owned())
}

fn size_text(text: &str) -> Result<String, String> {
    toolkit::cli::size(text).map(|_| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<Warmup, clap::Error> {
        Warmup::try_parse_from(std::iter::once("warmup").chain(args.iter().copied()))
    }

    #[test]
    fn a_command_after_the_separator_may_begin_with_an_option() {
        let w = parse(&["--gpus", "2", "--", "--gpus", "-n"]).expect("parses");
        assert_eq!(w.command, [OsString::from("--gpus"), OsString::from("-n")]);
        assert_eq!(w.gpus, Some(2));
    }

    #[test]
    fn typos_and_bad_values_are_usage_errors() {
        use clap::error::ErrorKind;
        let kind = |args: &[&str]| parse(args).expect_err("refused").kind();
        assert_eq!(kind(&["--bogus", "--", "true"]), ErrorKind::UnknownArgument);
        assert_eq!(
            kind(&["--gpus", "abc", "--", "true"]),
            ErrorKind::ValueValidation
        );
        assert_eq!(
            kind(&["--devices", ",,", "--", "true"]),
            ErrorKind::ValueValidation
        );
        assert_eq!(
            kind(&["--backend", "bogus", "--", "true"]),
            ErrorKind::ValueValidation
        );
        assert_eq!(
            kind(&["--max-log", "1.5M", "--", "true"]),
            ErrorKind::ValueValidation
        );
        assert_eq!(
            kind(&["--grace", "-1", "--", "true"]),
            ErrorKind::ValueValidation
        );
        assert_eq!(
            kind(&["--by-key", "--entry", "x", "--", "true"]),
            ErrorKind::ArgumentConflict
        );
        assert_eq!(kind(&["true"]), ErrorKind::UnknownArgument);
    }

    #[test]
    fn options_passed_on_keep_their_values_whole() {
        let w = parse(&["--timeout", "5", "--cache-per-child", "--", "x"]).expect("parses");
        let argv = w.spawn.argv();
        assert_eq!(
            argv,
            [OsString::from("--timeout=5"), "--cache-per-child".into()]
        );
    }
}
