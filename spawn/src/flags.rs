//! warmup-spawn's command line: its name, [`Args`], the examples and the EXIT STATUS of each
//! mode that `--help` shows. A leaf: no module of this crate is named here.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// The name every line of this tool's starts with.
pub const TOOL: &str = "warmup-spawn";

pub const EXAMPLES: &str = "EXAMPLES:
  # one pytest per shard, on the GPUs the caller may use (--plan /tmp/run works too)
  warmup-spawn --plan /tmp/run/plan.json -- pytest benchmark/test_mm.py --shape_file shapes.yaml
  (FlagGems 5.0: benchmark/test_blas_perf.py -m mm in place of benchmark/test_mm.py)

  # pick the devices; a device listed twice takes two children at once (not in a by-key plan)
  warmup-spawn --plan /tmp/run/plan.json --devices 4,5,6,7 --timeout 3600 -- pytest ...

  # see what would run, as copy-pastable env lines; runs and writes nothing
  warmup-spawn --plan /tmp/run/plan.json --dry-run -- pytest ...

  # shards 3 and 5 to 7 only (re-running failed ones: only their outputs are replaced)
  warmup-spawn --plan /tmp/run/plan.json --only 3,5-7 -- pytest ...

  # in a Slurm array task (sbatch --array=0-7): that task's shard, on the GPU Slurm gave it
  warmup-spawn --plan /shared/run/plan.json --index-from-env SLURM_ARRAY_TASK_ID -- pytest ...

  # the device tokens a run would use
  CUDA_VISIBLE_DEVICES=GPU-8f2a,GPU-77c1 warmup-spawn --list-devices

  # for a script: what happened, one `name value` line each (the contract's Run summaries)
  summary=$(warmup-spawn --plan /tmp/run/plan.json --summary - -- pytest ...)

  # a by-key plan (warmup-shard --by-key): COMMAND whole in each child, one child per device,
  # the children claiming autotune keys in SCRATCH/claims
  warmup-spawn --plan /tmp/run --devices 0,1,2,3 -- pytest benchmark/test_mm.py

  # the sweep, then merge and publish, and COMMAND measured once on the configs: a pytest COMMAND
  # starts with the sweep and waits at its gate (the contract, The gate); exit: COMMAND's
  warmup-spawn --plan /tmp/run --measure --summary /tmp/run.summary --record-dir rec -- pytest ...

BACKENDS (--backend; auto: FLAGGEMS_VENDOR, else the visibility variable that is set, else a probe):
  cuda CUDA_VISIBLE_DEVICES | rocm HIP_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES |
  ascend ASCEND_RT_VISIBLE_DEVICES | cambricon MLU_VISIBLE_DEVICES | mthreads MUSA_VISIBLE_DEVICES |
  metax MACA_VISIBLE_DEVICES | kunlunxin XPU_VISIBLE_DEVICES | enflame TOPS_VISIBLE_DEVICES |
  iluvatar CUDA_VISIBLE_DEVICES

FILES:
  SCRATCH/w<i>/worker.log     child i's stdout and stderr (truncated at its start; --max-log caps it)
  SCRATCH/w<i>/rec/           child i's FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR
  SCRATCH/w<i>/status.json    child i's outcome; absent when the shard never started
  SCRATCH/w<i>/progress.json  child i's keys tuned and configs timed, which its harness keeps
                              (WARMUP_HARNESS_PROGRESS): on a terminal in the live lines, in a
                              log a line per running device every 10 s (WARMUP_SPAWN_PROGRESS_SECONDS
                              sets another interval, for tests)
  SCRATCH/claims/             a by-key plan's claims and winners (WARMUP_HARNESS_CLAIM_DIR),
                              emptied by a run of the whole plan
  SCRATCH/w<i>/.triton_cache  child i's TRITON_CACHE_DIR, with --cache-per-child only: by default
                              children share the caller's Triton cache, so each kernel is compiled
                              once for all of them, and a later run finds it compiled";

/// This tool's exit statuses, per mode (docs/CONTRACT.md, "Exit statuses").
const EXIT_STATUS: [(&str, &[(&str, &str)]); 4] = [
    (
        "a run (--plan, also with --only or --index-from-env):",
        &[
            ("0", "every shard ran to a good end"),
            (
                "1",
                "the shards ran and some failed: exited non-zero, timed out or did not start",
            ),
            toolkit::USAGE_ROW,
            ("3", "nothing to do: the plan has no shard to run"),
            (
                "128+N",
                "stopped by signal N, after every child was stopped and reaped",
            ),
        ],
    ),
    (
        "--measure:",
        &[
            ("N", "the measurement's (COMMAND's) status; 127 where it cannot be run"),
            toolkit::USAGE_ROW,
            (
                "128+N",
                "stopped by signal N, after every child, tool and the measurement was stopped",
            ),
        ],
    ),
    (
        "--finish:",
        &[
            ("0", "every shard finished; the configs are published"),
            (
                "1",
                "some shards did not finish (`rerun`); what the others recorded is published",
            ),
            (
                "2",
                "usage error, or merging or publishing failed (`error`); warmup-merge's own status \
                 where it gave one",
            ),
            ("3", "no configs recovered from the shards"),
            (
                "128+N",
                "stopped by signal N, after the tool it was running was stopped",
            ),
        ],
    ),
    (
        "--dry-run, --list-devices, --lock-scratch:",
        &[
            ("0", "done"),
            toolkit::USAGE_ROW,
            ("3", "--dry-run: the plan has no shard to run"),
        ],
    ),
];

/// The EXIT STATUS section: each mode's statuses under its name.
fn exit_status_help() -> String {
    let mut text = String::from("EXIT STATUS:");
    for (mode, rows) in EXIT_STATUS {
        let table = toolkit::exit_status_help(rows);
        text.push_str("\n  ");
        text.push_str(mode);
        for line in table.lines().skip(1) {
            text.push_str("\n  ");
            text.push_str(line);
        }
    }
    text
}

/// Run one pinned, supervised child per shard over a device pool.
#[derive(Debug, clap::Parser)]
#[command(
    name = TOOL,
    version,
    about,
    after_long_help = toolkit::cli::after_help(EXAMPLES, &exit_status_help()),
    group = clap::ArgGroup::new("publishing").args(["measure", "finish"])
)]
pub struct Args {
    #[command(flatten)]
    pub op: protocol::op::OpArg,

    /// The plan warmup-shard wrote (SCRATCH/plan.json), or its SCRATCH folder
    #[arg(
        long,
        value_name = "PLAN",
        required_unless_present_any = ["list_devices", "lock_scratch"]
    )]
    pub plan: Option<PathBuf>,

    /// Device tokens, comma-separated, as the runtime spells them (0, GPU-<uuid>, MIG-<uuid>);
    /// default: the backend's visibility variable, else every device the backend probes
    #[arg(long, value_name = "LIST")]
    pub devices: Option<String>,

    /// auto, a backend name (cuda, rocm, ascend, cambricon, mthreads, metax, kunlunxin, enflame,
    /// iluvatar) or a FlagGems vendor name (nvidia, amd, hygon, ...)
    #[arg(long, value_name = "NAME", default_value = "auto")]
    pub backend: String,

    /// Stop a child (SIGTERM to its process group, then SIGKILL after --grace) that runs longer
    #[arg(long, value_name = "SECS", value_parser = toolkit::cli::seconds, allow_negative_numbers = true)]
    pub timeout: Option<Duration>,

    /// Seconds between SIGTERM and SIGKILL when stopping children
    #[arg(
        long,
        value_name = "SECS",
        value_parser = toolkit::cli::seconds,
        default_value = "10",
        allow_negative_numbers = true
    )]
    pub grace: Duration,

    /// Keep at most SIZE bytes of each child's output in its worker.log (e.g. 200M, 2G); the
    /// rest is read and dropped, and the log says so [default: no limit]
    #[arg(long, value_name = "SIZE", value_parser = toolkit::cli::size, allow_negative_numbers = true)]
    pub max_log: Option<u64>,

    /// Give each child a Triton cache of its own (SCRATCH/w<i>/.triton_cache), as the pytest
    /// plugin did, instead of the caller's TRITON_CACHE_DIR, which children share by default
    #[arg(long)]
    pub cache_per_child: bool,

    /// Write the run summary (counts by outcome, seconds, each shard's outcome and log) to
    /// FILE, atomically, as the contract's "Run summaries" says (SEE ALSO); `-` is stdout
    #[arg(long, value_name = "FILE")]
    pub summary: Option<PathBuf>,

    /// Each child resumes from the record in DIR (WARMUP_HARNESS_RESUME_DIR=DIR): a key it holds
    /// for this Triton and device is not tuned again; the measurement is not given it [default:
    /// with --measure, the record folder]
    #[arg(long, value_name = "DIR", requires = "plan")]
    pub resume_dir: Option<PathBuf>,

    /// Each child tunes every key again (WARMUP_HARNESS_FRESH=1), whatever --resume-dir names;
    /// the measurement is not given it
    #[arg(long, requires = "plan")]
    pub fresh: bool,

    /// Run only these shards: indices and ranges, e.g. 3, 0,4,8, 2-5; only their outputs are
    /// cleared and written
    #[arg(long, value_name = "LIST", requires = "plan")]
    pub only: Option<String>,

    /// Run only the shard whose index this variable holds (SLURM_ARRAY_TASK_ID, SLURM_PROCID,
    /// JOB_COMPLETION_INDEX); a task that sees one device keeps it as it is
    #[arg(long, value_name = "VAR", requires = "plan", conflicts_with = "only")]
    pub index_from_env: Option<String>,

    /// Print each shard's device, environment changes and argv as `env` lines; run nothing
    #[arg(long, conflicts_with = "summary")]
    pub dry_run: bool,

    /// Print the device tokens a run would use, one per line, and exit
    #[arg(long, conflicts_with_all = ["plan", "dry_run", "timeout", "command", "summary"])]
    pub list_devices: bool,

    /// Take SCRATCH's lock for the caller, on the descriptor it lends in WARMUP_SCRATCH_LOCK_FD
    /// (open on SCRATCH/.lock), and exit: the caller holds it until it closes that descriptor or
    /// ends, and the tools it runs run under it (the contract's "The scratch lock", SEE ALSO)
    #[arg(long, value_name = "SCRATCH", conflicts_with_all = ["plan", "dry_run", "list_devices", "summary", "command"])]
    pub lock_scratch: Option<PathBuf>,

    /// After the sweep, merge and publish its configs (warmup-merge, warmup-publish) and run
    /// COMMAND once, unpinned, on them: the measurement, supervised as one more job and stopped
    /// by the same rule. A pytest COMMAND starts with the sweep, with `-p warmup_harness`, and
    /// waits at its gate before its first test; any other runs after publishing. Exit status:
    /// the measurement's; 128+N when signal N stopped the run (the contract's "The gate")
    #[arg(long, requires = "plan", conflicts_with_all = ["dry_run", "only", "index_from_env"])]
    pub measure: bool,

    /// Finish a sweep whose shards ran elsewhere (warmup-slurm's finishing job): merge their
    /// records, name each shard that did not finish, publish, and print the run summary the
    /// script relays (`say`, `rerun`, `env`, `error` lines); exit 0 every shard finished, 1 some
    /// did not, 3 no configs recovered
    #[arg(long, requires = "plan", conflicts_with_all = ["dry_run", "measure", "only", "index_from_env", "summary", "command"])]
    pub finish: bool,

    /// With --measure or --finish: publish into DIR (and keep the sweep's costs there; with
    /// --measure the children resume from it); blank is none [default:
    /// $FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR when not blank, else SCRATCH/merged]
    #[arg(long, value_name = "DIR", requires = "publishing")]
    pub record_dir: Option<PathBuf>,

    /// With --measure: remove SCRATCH once the measurement has ended, when nothing in it is
    /// needed (the configs published elsewhere, every shard ok, no conflict, no stop); else say
    /// where it is kept
    #[arg(long, requires = "measure")]
    pub discard_scratch: bool,

    /// With --measure: this run's signature (warmup-plan's `signature`): when every shard ends
    /// ok, warmup-publish gets `--signature SIG`, so the sidecar vouches that the record holds
    /// every key this run needs
    #[arg(long, value_name = "SIG", requires = "measure")]
    pub signature: Option<String>,

    /// With --measure: start COMMAND after publishing, never alongside the sweep (warmup-plan
    /// passes it where it cannot tell that warmup_harness runs in COMMAND: no `-p warmup_harness` is added)
    #[arg(long, requires = "measure")]
    pub measure_after: bool,

    /// The command each child runs, after `--` (as warmup takes it, so that no word of
    /// it is read as an option of this tool); its --shape_file is replaced by the shard's
    #[arg(value_name = "COMMAND", last = true)]
    pub command: Vec<OsString>,
}
