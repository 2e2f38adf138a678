//! The benchmark harness's environment variables (docs/CONTRACT.md, "The harness protocol"), and
//! the rules that read or choose them (the record folder a value names, fresh or resume).
//!
//! These are the harness's names; the tools take them as defaults, never as the only way in.

/// Op name, trimmed; empty or unset means [`DEFAULT_OP`] (the rule: [`crate::op::OpArg`]).
pub const CURRENT_OP: &str = "FLAGGEMS_PERF_CURRENT_OP";
/// GPUs asked for; unset, not an integer, or < 2 disables the warmup.
pub const GPUS: &str = "PARALLEL_WARMUP_GPUS";
/// `1` in every child; when set in the pipeline's own environment the pipeline does nothing.
pub const WARMUP_WORKER: &str = "FLAGGEMS_PERF_WARMUP_WORKER";
/// The harness writes the winning configs to `<dir>/<op>.json`.
pub const RECORD_DIR: &str = "FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR";
/// The harness reads `<dir>/<op>.json` and pins those configs instead of sweeping.
pub const REPLAY_DIR: &str = "FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR";
/// Triton's kernel cache. Children inherit the caller's, so they share their compiles and a
/// second run finds them; `warmup-spawn --cache-per-child` gives each child its own instead.
pub const TRITON_CACHE_DIR: &str = "TRITON_CACHE_DIR";
/// How many children warmup-spawn runs at once on this machine, in each child: the harness divides
/// the CPUs among them for its compile workers.
pub const SPAWN_CHILDREN: &str = "WARMUP_SPAWN_CHILDREN";
/// The measurement's gate (docs/CONTRACT.md, "The gate"): `fd:N`, N the read end of a pipe
/// `warmup-spawn --measure` holds the write end of; the harness reads one line there before its
/// first test.
pub const GATE: &str = "WARMUP_HARNESS_GATE";
/// The harness's IR dump folder; the IR comes from the measurement run, never from a child.
pub const TTGIR_DUMP_DIR: &str = "FLAGGEMS_PERF_TTGIR_DUMP_DIR";
/// The harness's colour switch; `never` in a child, whose output goes to a log file.
pub const COLOR: &str = "FLAGGEMS_PERF_COLOR";
/// By-key mode: the folder where the harness claims each autotune key (`SCRATCH/claims`).
pub const CLAIM_DIR: &str = "WARMUP_HARNESS_CLAIM_DIR";
/// The file a sweep child's harness keeps its progress in (`SCRATCH/w<i>/progress.json`:
/// `{"keys": K, "configs": C}`), which warmup-spawn reads for its progress lines.
pub const PROGRESS: &str = "WARMUP_HARNESS_PROGRESS";
/// The folder of an earlier record whose keys (same Triton, same device model) a record session
/// pins instead of tuning them again, carrying them into its own record (resume).
pub const RESUME_DIR: &str = "WARMUP_HARNESS_RESUME_DIR";
/// `1`: a record session tunes every key again, whatever an earlier record holds.
pub const FRESH: &str = "WARMUP_HARNESS_FRESH";
/// The signature of this run (`protocol::signature`), set by warmup-plan in a reuse or
/// record run: a record session resuming in place (from its own record folder) that ends with every test
/// passed writes it into the sidecar's `complete_for`.
pub const SIGNATURE: &str = "WARMUP_HARNESS_SIGNATURE";
/// A record session races a swept key's configs, timing in full only those a short timing cannot
/// rule out, unless this is `0` (scripts/warmup `--no-race`; `--race` sets `1`).
pub const RACE: &str = "WARMUP_HARNESS_RACE";
/// The vendor FlagGems runs on; `warmup-spawn --backend auto` follows it when set.
pub const VENDOR: &str = "FLAGGEMS_VENDOR";

/// The op name used when `--op` and [`CURRENT_OP`] are unset or blank.
pub const DEFAULT_OP: &str = "default";

/// Hidden, for tests: a folder standing in for `/` where a tool reads `/proc`, `/sys` and `/dev`
/// (warmup-spawn's backend probe, [`crate::probe`]'s device model); unset or empty: `/`.
pub const PROBE_ROOT: &str = "WARMUP_PROBE_ROOT";

/// The record folder a value of [`RECORD_DIR`] names, as the plugin read it: trimmed of spaces
/// at both ends (nothing inside, a newline neither); blank or unset is none. Not UTF-8: as is.
pub fn record_dir_of(value: Option<&std::ffi::OsStr>) -> Option<std::path::PathBuf> {
    let dir = value?;
    match dir.to_str() {
        Some(s) => Some(std::path::PathBuf::from(s.trim())).filter(|p| !p.as_os_str().is_empty()),
        None => Some(std::path::PathBuf::from(dir)),
    }
}

/// The record folder of a run that publishes, the one rule of warmup-spawn, warmup-publish and
/// warmup-slurm: [`record_folder_given`], made absolute, links not resolved. `None`: the caller's
/// fallback (warmup-spawn's `SCRATCH/merged`, warmup-publish's `--fallback-dir`).
pub fn record_folder(
    flag: Option<&std::ffi::OsStr>,
    var: Option<&std::ffi::OsStr>,
) -> Option<std::path::PathBuf> {
    let (dir, _) = record_folder_given(flag, var)?;
    Some(std::path::absolute(&dir).unwrap_or(dir))
}

/// `--record-dir` as given when given (blank: none, and the variable is not read), else
/// [`RECORD_DIR`] as [`record_dir_of`] reads it; with the name of the one that gave it, for
/// messages.
pub fn record_folder_given(
    flag: Option<&std::ffi::OsStr>,
    var: Option<&std::ffi::OsStr>,
) -> Option<(std::path::PathBuf, &'static str)> {
    match flag {
        Some(flag) => {
            let blank = flag.as_encoded_bytes().iter().all(u8::is_ascii_whitespace);
            (!blank).then(|| (std::path::PathBuf::from(flag), "--record-dir"))
        }
        None => record_dir_of(var).map(|dir| (dir, RECORD_DIR)),
    }
}

/// The fresh/resume rule for a record session of the op (docs/CONTRACT.md, "Resume"): `--fresh`
/// gives it [`FRESH`]`=1`, every key tuned again; else it resumes from `record_dir`
/// ([`RESUME_DIR`]); neither without one. warmup-plan applies it to a one-device record run,
/// warmup-spawn to a sweep's children (never to the measurement).
pub fn resume_env(
    fresh: bool,
    record_dir: Option<&std::ffi::OsStr>,
) -> Option<(&'static str, std::ffi::OsString)> {
    if fresh {
        Some((FRESH, "1".into()))
    } else {
        record_dir.map(|dir| (RESUME_DIR, dir.to_os_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn a_record_folder_is_trimmed_and_blank_is_none_but_a_newline_inside_is_kept() {
        let dir = |v: &str| record_dir_of(Some(OsStr::new(v)));
        assert_eq!(dir(" /r \n"), Some("/r".into()));
        assert_eq!(dir(" \t\n"), None);
        assert_eq!(dir("/a\nb"), Some("/a\nb".into()));
        assert_eq!(record_dir_of(None), None);
    }

    #[test]
    fn the_record_folder_is_the_flag_as_given_else_the_variable_and_a_blank_flag_is_none() {
        let (flag, var) = (Some(OsStr::new("/f ")), Some(OsStr::new(" /v ")));
        assert_eq!(
            record_folder(flag, var),
            Some("/f ".into()),
            "a flag is taken as given"
        );
        assert_eq!(record_folder(None, var), Some("/v".into()));
        assert_eq!(record_folder(Some(OsStr::new(" ")), var), None);
        assert_eq!(record_folder(None, Some(OsStr::new(""))), None);
        let cwd = std::env::current_dir().expect("cwd");
        assert_eq!(
            record_folder(Some(OsStr::new("r")), None),
            Some(cwd.join("r"))
        );
    }

    #[test]
    fn fresh_wins_over_a_record_folder_and_without_either_nothing_is_set() {
        let dir = Some(OsStr::new("/r"));
        assert_eq!(resume_env(true, dir), Some((FRESH, "1".into())));
        assert_eq!(resume_env(false, dir), Some((RESUME_DIR, "/r".into())));
        assert_eq!(resume_env(false, None), None);
    }
}
