//! The one decision of a scripts/warmup run, from what was discovered ([`Facts`]): run COMMAND
//! plain, reuse the record, record in one process, or sweep. Pure: no file is read here, so
//! every rule is a unit test. The skip rules are the plugin's, in its order; where the harness is
//! in COMMAND's Python (and this is no child and no replay run), a record that answers the op
//! and a run on one device come first, an unset GPU count means every visible device, a run
//! with no shape file on 2 or more distinct devices claims keys (by-key mode) without being told,
//! and a skip with a record folder records in one process, resuming from it, so that no key the
//! folder holds is tuned again (docs/CONTRACT.md, "warmup-plan").

use std::path::{Path, PathBuf};

/// The GPU count, from `--gpus` or the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gpus {
    Unset,
    /// `PARALLEL_WARMUP_GPUS` holds no whole number: a skip rule, as in the plugin.
    Invalid(String),
    Count(u64),
}

/// The op's record in the record folder, as this run would read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// `<op>.json` with a sidecar naming this Triton and this device model.
    Answers,
    /// No record, or one made elsewhere: why.
    Misses(String),
    /// `<op>.json` is no record file (empty, cut off, not `{kernel: {key: config}}`): why. One
    /// process's harness sets it aside ("Resuming in place"); a sweep publishes a whole
    /// record over it.
    Damaged(String),
}

impl Record {
    fn why(&self) -> Option<&str> {
        match self {
            Record::Answers => None,
            Record::Misses(why) | Record::Damaged(why) => Some(why),
        }
    }
}

/// What the history predicts, when there is one to predict from.
#[derive(Debug, Clone, PartialEq)]
pub enum Prediction {
    /// No prediction asked (no record folder, by-key, --always).
    NotAsked,
    /// No usable history: why; the warmup runs.
    Unusable(String),
    /// The figures: the warmup's and the plain run's seconds.
    Figures {
        warmup: f64,
        plain: f64,
        worth: bool,
    },
}

/// The run's record folder: where the op's record is read from and recorded into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordFolder {
    /// `FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR` names it.
    Named(PathBuf),
    /// None is named: the record cache's folder for this Triton and device model, which can be
    /// made and written; it is made once a run that uses it is decided (`crate::discover::Discovery::act`).
    Cache(PathBuf),
    /// None is named and the record cache cannot be used: why.
    CacheUnavailable(String),
    /// A warmup child: the tools that started it own the record folder.
    NotUsed,
}

impl RecordFolder {
    /// The folder, where there is one.
    pub fn dir(&self) -> Option<&Path> {
        match self {
            RecordFolder::Named(dir) | RecordFolder::Cache(dir) => Some(dir),
            RecordFolder::CacheUnavailable(_) | RecordFolder::NotUsed => None,
        }
    }
}

/// Everything the decision reads.
#[derive(Debug, Clone)]
pub struct Facts {
    /// The op, as the reasons name it.
    pub op: String,
    pub worker: bool,
    /// FlagGems' own `--parallel N` in COMMAND (`protocol::command::flaggems_parallel_of`).
    pub flaggems_parallel: Option<String>,
    pub gpus: Gpus,
    pub by_key: bool,
    pub fresh: bool,
    /// The shape file COMMAND names, and whether it is a file.
    pub shape_file: Option<(PathBuf, bool)>,
    pub replay_dir_set: bool,
    /// The devices the run has (`--devices`, the visibility variable or the probe), or why not.
    pub devices: Result<Vec<String>, String>,
    /// Whether the harness runs in COMMAND's pytest, and if not, why not.
    pub harness: Result<(), String>,
    pub record_folder: RecordFolder,
    pub record: Record,
    pub prediction: Prediction,
}

/// How COMMAND runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Unchanged, after saying why.
    Plain { reason: String },
    /// Once, reusing the record in `dir`, which answers the op: the harness records into `dir`
    /// resuming from it ("Resuming in place"), so a key it holds is pinned and one it lacks is
    /// tuned live, then added. Not the harness's replay mode (`REPLAY_DIR`).
    Reuse { reason: String, dir: PathBuf },
    /// Once, recording (compile-ahead on) into `dir` and resuming from it.
    Record { reason: String, dir: PathBuf },
    /// The sweep on `devices` (the first `shards` of them), then the measurement.
    Sweep {
        reason: String,
        devices: Vec<String>,
        /// By the history in the record folder (lpt), rather than the robust model.
        by_history: bool,
        /// By key (`--by-key`, or no shape file where the harness is): no shapes are split.
        by_key: bool,
    },
}

impl Decision {
    pub fn name(&self) -> &'static str {
        match self {
            Decision::Plain { .. } => "plain",
            Decision::Reuse { .. } => "reuse",
            Decision::Record { .. } => "record",
            Decision::Sweep { .. } => "sweep",
        }
    }

    pub fn reason(&self) -> &str {
        match self {
            Decision::Plain { reason }
            | Decision::Reuse { reason, .. }
            | Decision::Record { reason, .. }
            | Decision::Sweep { reason, .. } => reason,
        }
    }
}

fn plain(reason: impl Into<String>) -> Decision {
    Decision::Plain {
        reason: reason.into(),
    }
}

/// A skip: COMMAND runs plain, for `cause`, worded `CAUSE, skipping` or `CAUSE; skipping` as the
/// plugin words each; where the harness runs, the cause of one that would not re-tune is said as
/// one process's instead (`rules`).
struct Skip {
    cause: String,
    sep: char,
}

impl Skip {
    fn comma(cause: impl Into<String>) -> Self {
        Skip {
            cause: cause.into(),
            sep: ',',
        }
    }

    fn semicolon(cause: impl Into<String>) -> Self {
        Skip {
            cause: cause.into(),
            sep: ';',
        }
    }

    fn decision(self) -> Decision {
        plain(format!("{}{} skipping", self.cause, self.sep))
    }
}

/// A rule's answer: `Err` is the skip made there, which no later rule changes.
type Rule<T> = Result<T, Skip>;

/// The decision, rule by rule.
pub fn decide(f: &Facts) -> Decision {
    rules(f).unwrap_or_else(std::convert::identity)
}

fn rules(f: &Facts) -> Result<Decision, Decision> {
    if f.worker {
        return Err(
            Skip::comma("FLAGGEMS_PERF_WARMUP_WORKER is set: this is a warmup child").decision(),
        );
    }
    if let Some(n) = &f.flaggems_parallel {
        return Err(plain(format!(
            "COMMAND runs FlagGems' own --parallel {n}, which tunes and measures its shapes on {n} \
             GPUs at once; the warmup measures serially on one, so COMMAND runs plain (drop \
             --parallel to warm it up)"
        )));
    }
    if let Gpus::Invalid(text) = &f.gpus {
        return Err(not_whole(text).decision());
    }
    let harness = f.harness.is_ok() && !f.replay_dir_set;
    if !harness {
        return sweep_rules(f, false).map_err(Skip::decision);
    }
    if let Some(decision) = harness_decision(f) {
        return Ok(decision);
    }
    // Where the harness runs, a skip never re-tunes what the record folder holds: one process
    // records, resuming from it, as on one device.
    sweep_rules(f, true).or_else(|skip| {
        one_process(f, format!("{}: one process instead", skip.cause))
            .ok_or_else(|| skip.decision())
    })
}

/// The plugin's rules: a sweep, or the first skip that applies.
fn sweep_rules(f: &Facts, harness: bool) -> Rule<Decision> {
    let gpus = gpu_count(f, harness)?;
    // No shape file on 2 or more distinct devices, where the harness is: the children claim keys.
    let by_key = f.by_key || (harness && f.shape_file.is_none() && distinct(&f.devices) >= 2);
    if !by_key {
        shape_file_given(f.shape_file.as_ref())?;
    }
    if f.replay_dir_set {
        return Err(Skip::comma("FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR is set; configs are already pinned, nothing to sweep"));
    }
    let devices = sweep_devices(&f.devices, by_key, gpus)?;
    let reason = worth_it(f, by_key)?;
    Ok(Decision::Sweep {
        reason: format!(
            "{reason}; sweeping on {}{}",
            devices.join(","),
            not_reused(f)
        ),
        by_history: f.record_folder.dir().is_some() && !by_key,
        by_key,
        devices,
    })
}

/// The GPU count asked for; where the harness is, none asked is every visible device (a single
/// one was recorded before this rule); without it, none asked is a skip that says why.
fn gpu_count(f: &Facts, harness: bool) -> Rule<u64> {
    match &f.gpus {
        Gpus::Unset if harness => Ok(u64::MAX),
        Gpus::Unset => Err(Skip::semicolon(format!(
            "no GPU count (--gpus or PARALLEL_WARMUP_GPUS), and every visible GPU is the count only \
             where the harness runs in COMMAND ({})",
            f.harness.as_ref().err().map_or("a replay is pinned", String::as_str)
        ))),
        Gpus::Count(n) if *n < 2 => Err(Skip::comma(format!(
            "GPU count {n} is below 2; nothing to parallelize"
        ))),
        Gpus::Count(n) => Ok(*n),
        Gpus::Invalid(text) => Err(not_whole(text)),
    }
}

/// `PARALLEL_WARMUP_GPUS` holds no whole number: a skip, as in the plugin, whatever else holds.
fn not_whole(text: &str) -> Skip {
    Skip::semicolon(format!("GPU count '{text}' is not a whole number"))
}

/// Shape mode splits the shape file COMMAND names: there must be one, and it must be a file.
fn shape_file_given(shape_file: Option<&(PathBuf, bool)>) -> Rule<()> {
    match shape_file {
        None => Err(Skip::comma(
            "no --shape_file; parallel warmup needs an explicit shape set",
        )),
        Some((file, false)) => Err(Skip::semicolon(format!(
            "--shape_file {}: no such file",
            file.display()
        ))),
        Some(_) => Ok(()),
    }
}

/// The devices a sweep runs on: the first `gpus` of those listed, 2 or more of them.
fn sweep_devices(
    devices: &Result<Vec<String>, String>,
    by_key: bool,
    gpus: u64,
) -> Rule<Vec<String>> {
    let listed = match devices {
        Ok(list) => list,
        Err(why) => return Err(Skip::semicolon(format!("cannot list the devices ({why})"))),
    };
    if listed.len() < 2 {
        return Err(Skip::comma(format!(
            "only {} visible GPU(s); nothing to parallelize",
            listed.len()
        )));
    }
    // By key, one child per device: a device listed twice is one (`--by-key` refused it in
    // --devices already; a visibility variable's repeats are dropped here).
    let children = if by_key {
        unique(listed)
    } else {
        listed.clone()
    };
    if children.len() < 2 {
        return Err(Skip::comma(format!(
            "{}; by key each device runs one child, nothing to parallelize",
            listed_again(listed)
        )));
    }
    let take = usize::try_from(gpus)
        .unwrap_or(usize::MAX)
        .min(children.len());
    Ok(children[..take].to_vec())
}

/// Why the sweep runs, or the plain run where the history predicts it does not pay off.
fn worth_it(f: &Facts, by_key: bool) -> Rule<String> {
    let dir = || {
        f.record_folder
            .dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default()
    };
    match &f.prediction {
        // By key there are no shapes, hence no history to predict from.
        _ if by_key && !f.by_key => Ok("no --shape_file: each device's child runs COMMAND whole and claims the keys it meets first (by-key mode)".to_owned()),
        _ if by_key => Ok("the warmup runs".to_owned()),
        Prediction::Figures {
            warmup,
            plain: alone,
            worth: false,
        } => Err(Skip::semicolon(format!(
            "the history in {} predicts {warmup:.2} s with the warmup against {alone:.2} s plain, less than 10% saved (--always sweeps anyway)",
            dir()
        ))),
        Prediction::Figures { warmup, plain, .. } => Ok(format!(
            "the history in {} predicts {warmup:.2} s with the warmup against {plain:.2} s plain",
            dir()
        )),
        Prediction::Unusable(why) => Ok(format!("no usable history ({why}): the warmup runs")),
        Prediction::NotAsked => Ok("the warmup runs".to_owned()),
    }
}

/// The devices, each once, in their order.
fn unique(list: &[String]) -> Vec<String> {
    let mut seen = Vec::new();
    for d in list {
        if !seen.contains(d) {
            seen.push(d.clone());
        }
    }
    seen
}

/// One device listed more than once, as the reasons name it: `one device (0, listed 2 times)`.
fn listed_again(list: &[String]) -> String {
    format!("one device ({}, listed {} times)", list[0], list.len())
}

/// How many distinct devices are listed (none when they cannot be).
fn distinct(devices: &Result<Vec<String>, String>) -> usize {
    devices.as_ref().map_or(0, |list| unique(list).len())
}

/// Reuse or one process recording, where the harness runs in COMMAND (issue 24): `None` when
/// neither applies and the plugin's rules decide.
fn harness_decision(f: &Facts) -> Option<Decision> {
    if let (Some(dir), Record::Answers, false) = (f.record_folder.dir(), &f.record, f.fresh) {
        return Some(Decision::Reuse {
            reason: format!(
                "the record in {} answers op {} for this Triton and device model: COMMAND runs once, reusing it; a key it lacks is tuned live and added (--fresh tunes every key again)",
                dir.display(),
                f.op
            ),
            dir: dir.to_owned(),
        });
    }
    let one = one_device(f)?;
    if let RecordFolder::CacheUnavailable(why) = &f.record_folder {
        return Some(plain(format!(
            "no record folder is named and the record cache cannot be used ({why}): COMMAND runs unchanged, recording nothing (set {} to keep a record)",
            protocol::env::RECORD_DIR
        )));
    }
    one_process(f, format!("{one}: one device, one process"))
}

/// COMMAND once, the harness recording into the record folder and resuming from the keys it
/// holds; `lead` says why. `None` where there is no record folder.
fn one_process(f: &Facts, lead: String) -> Option<Decision> {
    let dir = f.record_folder.dir()?;
    let reason = match &f.record {
        Record::Damaged(why) => format!(
            "{lead}: COMMAND runs once with the harness recording into {}; {why}: the harness \
             sets it aside (it resumes in place)",
            dir.display()
        ),
        _ => format!(
            "{lead}: COMMAND runs once with the harness recording (compile-ahead on) into {}, for the next run{}",
            dir.display(),
            not_reused(f)
        ),
    };
    Some(Decision::Record {
        reason,
        dir: dir.to_owned(),
    })
}

/// Why the run is one device, where it is: the GPU count, or the devices listed.
fn one_device(f: &Facts) -> Option<String> {
    match (&f.gpus, &f.devices) {
        (Gpus::Count(n), _) if *n < 2 => Some(format!("GPU count {n}")),
        (_, Ok(list)) if list.len() == 1 => Some(format!("one visible GPU ({})", list[0])),
        // By key (asked, or no shape file to split) a device listed twice is one device: one
        // child per device would be one child, and one process records what it would claim.
        (_, Ok(list)) if (f.by_key || f.shape_file.is_none()) && distinct(&f.devices) == 1 => {
            Some(listed_again(list))
        }
        // No count, and the devices cannot be told: one process, as before.
        (Gpus::Unset, Err(_)) => Some("no GPU count".to_owned()),
        (Gpus::Unset, Ok(list)) if list.len() < 2 => Some("no GPU count".to_owned()),
        _ => None,
    }
}

/// Where the harness would have reused the record folder but its record does not answer this
/// run: why, and that the run resumes from the keys it holds.
fn not_reused(f: &Facts) -> String {
    match (f.record_folder.dir(), f.record.why(), &f.harness, f.fresh) {
        (Some(dir), Some(why), Ok(()), false) => format!(
            "; the record in {} is not reused ({why}): its keys are resumed from, the rest tuned",
            dir.display()
        ),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run that sweeps: two GPUs asked and listed, a shape file, no harness, no record folder.
    fn sweeping() -> Facts {
        Facts {
            op: "mm".into(),
            worker: false,
            flaggems_parallel: None,
            gpus: Gpus::Count(2),
            by_key: false,
            fresh: false,
            shape_file: Some(("s.yaml".into(), true)),
            replay_dir_set: false,
            devices: Ok(vec!["0".into(), "1".into()]),
            harness: Err("no harness".into()),
            record_folder: RecordFolder::CacheUnavailable("no HOME".into()),
            record: Record::Misses("no record".into()),
            prediction: Prediction::NotAsked,
        }
    }

    fn with_harness(mut f: Facts) -> Facts {
        f.harness = Ok(());
        f
    }

    fn answering(mut f: Facts) -> Facts {
        f.record_folder = RecordFolder::Named("/r".into());
        f.record = Record::Answers;
        f
    }

    fn reason(f: &Facts) -> String {
        let d = decide(f);
        assert_eq!(d.name(), "plain", "{d:?}");
        d.reason().to_owned()
    }

    #[test]
    fn two_devices_and_a_shape_file_sweep_on_the_devices_asked() {
        let mut f = sweeping();
        f.gpus = Gpus::Count(8);
        f.devices = Ok(vec!["0".into(), "1".into(), "2".into()]);
        let Decision::Sweep {
            devices,
            by_history,
            ..
        } = decide(&f)
        else {
            panic!("{:?}", decide(&f));
        };
        assert_eq!(devices, ["0", "1", "2"]);
        assert!(!by_history, "no record folder: the robust model");
        f.gpus = Gpus::Count(2);
        f.record_folder = RecordFolder::Named("/r".into());
        let Decision::Sweep {
            devices,
            by_history,
            ..
        } = decide(&f)
        else {
            panic!();
        };
        assert_eq!((devices.len(), by_history), (2, true));
    }

    #[test]
    fn a_worker_child_runs_plain_whatever_else_holds() {
        let mut f = answering(with_harness(sweeping()));
        f.worker = true;
        assert!(reason(&f).contains("warmup child"));
    }

    #[test]
    fn flaggems_own_parallel_runs_plain_whatever_else_holds() {
        let mut f = answering(with_harness(sweeping()));
        f.flaggems_parallel = Some("2".into());
        assert_eq!(decide(&f).name(), "plain");
        assert!(reason(&f).starts_with("COMMAND runs FlagGems' own --parallel 2,"));
    }

    #[test]
    fn gpu_counts_missing_invalid_or_below_two_skip_without_the_harness() {
        let mut f = sweeping();
        f.gpus = Gpus::Unset;
        assert!(reason(&f).contains("no GPU count"));
        assert!(reason(&f).contains("only where the harness runs in COMMAND (no harness)"));
        f.gpus = Gpus::Count(1);
        assert!(reason(&f).contains("below 2"));
        f.gpus = Gpus::Invalid("abc".into());
        assert!(reason(&f).contains("'abc' is not a whole number"));
        // An invalid count from the environment stays a skip even where the harness is.
        assert!(reason(&with_harness(f)).contains("not a whole number"));
    }

    #[test]
    fn no_shape_file_or_a_missing_one_skips_a_shape_mode_run_and_says_which() {
        let mut f = sweeping();
        f.shape_file = None;
        assert!(reason(&f).contains("no --shape_file"));
        f.shape_file = Some(("gone.yaml".into(), false));
        assert!(reason(&f).ends_with("--shape_file gone.yaml: no such file; skipping"));
        f.by_key = true;
        assert_eq!(decide(&f).name(), "sweep", "by-key needs no shape file");
    }

    #[test]
    fn a_replay_dir_a_device_listing_error_or_one_device_skips() {
        let mut f = sweeping();
        f.replay_dir_set = true;
        assert!(reason(&f).contains("already pinned"));
        // A replay run is no harness run either: the record folder is not reused over it.
        assert!(reason(&answering(with_harness(f.clone()))).contains("already pinned"));
        let mut f = sweeping();
        f.devices = Err("no devices found".into());
        assert!(reason(&f).contains("cannot list the devices (no devices found)"));
        f.devices = Ok(vec!["0".into()]);
        assert!(reason(&f).contains("only 1 visible GPU(s)"));
    }

    #[test]
    fn a_history_predicting_under_ten_percent_runs_plain_with_both_figures() {
        let mut f = sweeping();
        f.record_folder = RecordFolder::Named("/r".into());
        f.prediction = Prediction::Figures {
            warmup: 30.0,
            plain: 31.0,
            worth: false,
        };
        let why = reason(&f);
        assert!(
            why.contains("the history in /r predicts 30.00 s with the warmup against 31.00 s plain, less than 10% saved"),
            "{why}"
        );
        f.prediction = Prediction::Figures {
            warmup: 10.0,
            plain: 31.0,
            worth: true,
        };
        assert_eq!(decide(&f).name(), "sweep");
        f.prediction = Prediction::Unusable("no /r/mm.meta.json".into());
        assert!(decide(&f)
            .reason()
            .contains("no usable history (no /r/mm.meta.json)"));
    }

    #[test]
    fn a_record_that_answers_is_reused_once_where_the_harness_is() {
        let f = answering(with_harness(sweeping()));
        assert!(decide(&f)
            .reason()
            .starts_with("the record in /r answers op mm for this Triton"));
        assert_eq!(
            decide(&f),
            Decision::Reuse {
                reason: decide(&f).reason().to_owned(),
                dir: "/r".into()
            }
        );
        // Before the device and GPU-count rules: one device, no count, no shape file.
        let mut alone = f.clone();
        alone.gpus = Gpus::Unset;
        alone.shape_file = None;
        alone.devices = Err("none".into());
        assert_eq!(decide(&alone).name(), "reuse");
        // --fresh tunes again; no harness: the record is only resumed by the sweep's children.
        let mut fresh = f.clone();
        fresh.fresh = true;
        assert_eq!(decide(&fresh).name(), "sweep");
        assert_eq!(decide(&answering(sweeping())).name(), "sweep");
        let mut elsewhere = f;
        elsewhere.record = Record::Misses("made on another GPU".into());
        assert_eq!(decide(&elsewhere).name(), "sweep");
    }

    #[test]
    fn one_device_records_in_one_process_where_the_harness_is() {
        let mut f = with_harness(sweeping());
        f.gpus = Gpus::Count(1);
        f.record_folder = RecordFolder::Named("/r".into());
        let d = decide(&f);
        assert_eq!(
            d,
            Decision::Record {
                reason: d.reason().to_owned(),
                dir: "/r".into()
            }
        );
        assert!(
            d.reason().contains("GPU count 1") && d.reason().contains("into /r"),
            "{d:?}"
        );
        f.gpus = Gpus::Count(4);
        f.devices = Ok(vec!["3".into()]);
        assert!(decide(&f).reason().contains("one visible GPU (3)"));
        // The record cache's folder is recorded into as a named one is.
        f.record_folder = RecordFolder::Cache("/c".into());
        assert!(decide(&f).reason().contains("into /c, for the next run"));
        // No folder named and the cache cannot be used: COMMAND runs unchanged, saying why.
        f.gpus = Gpus::Unset;
        f.record_folder = RecordFolder::CacheUnavailable("no HOME".into());
        assert_eq!(
            reason(&f),
            "no record folder is named and the record cache cannot be used (no HOME): COMMAND \
             runs unchanged, recording nothing (set FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR to keep a \
             record)"
        );
        // A device listed twice still sweeps, as it always did.
        f.gpus = Gpus::Count(2);
        f.devices = Ok(vec!["0".into(), "0".into()]);
        assert_eq!(decide(&f).name(), "sweep");
    }

    #[test]
    fn a_record_that_does_not_answer_is_resumed_from_and_the_reason_says_why() {
        let mut f = with_harness(sweeping());
        f.record_folder = RecordFolder::Named("/r".into());
        f.record = Record::Misses("/r/mm.meta.json names no complete run".into());
        let d = decide(&f);
        assert_eq!(
            d.name(),
            "sweep",
            "two devices: the missing keys are swept in parallel"
        );
        assert!(
            d.reason().contains(
                "the record in /r is not reused (/r/mm.meta.json names no complete run): its keys are resumed from"
            ),
            "{d:?}"
        );
        f.gpus = Gpus::Count(1);
        let d = decide(&f);
        assert_eq!(
            d.name(),
            "record",
            "one device: the one process, as with no record"
        );
        assert!(d.reason().contains("is not reused"), "{d:?}");
        f.fresh = true;
        assert!(
            !decide(&f).reason().contains("is not reused"),
            "--fresh resumes nothing"
        );
        // A record file that is no record: the harness sets it aside and records there.
        f.fresh = false;
        f.record = Record::Damaged("/r/mm.json: empty file: it is no record".into());
        let Decision::Record { reason, .. } = decide(&f) else {
            panic!("{:?}", decide(&f));
        };
        assert!(
            reason.contains("empty file") && reason.contains("sets it aside"),
            "{reason}"
        );
        f.gpus = Gpus::Count(2);
        assert_eq!(
            decide(&f).name(),
            "sweep",
            "a sweep publishes a whole record over it"
        );
    }

    /// What makes a run meet a skip rule.
    type Skip = fn(&mut Facts);

    #[test]
    fn where_the_harness_runs_a_skip_with_a_record_folder_records_in_one_process_resuming() {
        // Two devices, a record the signature no longer answers (`-v` added), a history that
        // predicts under 10% saved: one process resumes from the folder rather than tune all.
        let mut f = with_harness(sweeping());
        f.record_folder = RecordFolder::Named("/r".into());
        f.record = Record::Misses("/r/mm.meta.json names no complete run".into());
        f.prediction = Prediction::Figures {
            warmup: 30.0,
            plain: 31.0,
            worth: false,
        };
        let d = decide(&f);
        assert_eq!(d.name(), "record", "{d:?}");
        assert_eq!(
            d.reason(),
            "the history in /r predicts 30.00 s with the warmup against 31.00 s plain, less than \
             10% saved (--always sweeps anyway): one process instead: COMMAND runs once with the \
             harness recording (compile-ahead on) into /r, for the next run; the record in /r is \
             not reused (/r/mm.meta.json names no complete run): its keys are resumed from, \
             the rest tuned"
        );
        // Every other skip of rule 3 the harness can meet, each into the same folder.
        let skips: [(&str, Skip); 5] = [
            ("no --shape_file", |f| {
                f.shape_file = None;
                f.devices = Err("no devices found".into());
            }),
            ("--shape_file gone.yaml: no such file", |f| {
                f.shape_file = Some(("gone.yaml".into(), false))
            }),
            ("cannot list the devices (none)", |f| {
                f.devices = Err("none".into())
            }),
            ("only 0 visible GPU(s)", |f| f.devices = Ok(vec![])),
            ("one device (0, listed 2 times)", |f| {
                f.by_key = true;
                f.gpus = Gpus::Count(2);
                f.devices = Ok(vec!["0".into(), "0".into()]);
            }),
        ];
        for (says, skip) in skips {
            let mut g = with_harness(sweeping());
            g.record_folder = RecordFolder::Cache("/c".into());
            skip(&mut g);
            let d = decide(&g);
            assert!(
                matches!(&d, Decision::Record { dir, .. } if dir == Path::new("/c")),
                "{says}: {d:?}"
            );
            assert!(
                d.reason().contains(says) && !d.reason().contains("skipping"),
                "{d:?}"
            );
            // Without the harness, or with no record folder to resume from, the skip stands.
            let mut bare = g.clone();
            bare.harness = sweeping().harness;
            assert!(reason(&bare).contains(says), "{says}");
            g.record_folder = RecordFolder::CacheUnavailable("no HOME".into());
            let said = reason(&g);
            assert!(
                said.contains("skipping") || said.contains("recording nothing"),
                "{said}"
            );
        }
        // A record file that is no record: one process that records there, as on one device.
        f.record = Record::Damaged("/r/mm.json: empty file: it is no record".into());
        assert!(matches!(decide(&f), Decision::Record { .. }));
        // A replay folder pins the configs, and a count that is no number is the plugin's skip.
        let mut g = f.clone();
        g.replay_dir_set = true;
        assert!(reason(&g).contains("already pinned"));
        f.gpus = Gpus::Invalid("x".into());
        assert!(reason(&f).contains("not a whole number"));
    }

    #[test]
    fn without_the_harness_one_device_keeps_the_old_skip_rules() {
        let mut f = sweeping();
        f.gpus = Gpus::Count(1);
        f.record_folder = RecordFolder::Named("/r".into());
        f.record = Record::Answers;
        assert!(reason(&f).contains("below 2"));
        f.gpus = Gpus::Count(4);
        f.devices = Ok(vec!["0".into()]);
        assert!(reason(&f).contains("only 1 visible GPU"));
    }

    #[test]
    fn no_shape_file_on_two_distinct_devices_claims_keys_where_the_harness_is() {
        let mut f = with_harness(sweeping());
        f.shape_file = None;
        f.gpus = Gpus::Unset;
        f.devices = Ok(vec!["0".into(), "1".into(), "0".into()]);
        f.record_folder = RecordFolder::Named("/r".into());
        f.prediction = Prediction::Figures {
            warmup: 30.0,
            plain: 31.0,
            worth: false,
        };
        let d = decide(&f);
        let Decision::Sweep {
            devices,
            by_key: true,
            by_history: false,
            ref reason,
        } = d
        else {
            panic!("{d:?}");
        };
        assert_eq!(devices, ["0", "1"], "every visible device, each once");
        assert!(
            reason.contains("no --shape_file") && reason.contains("by-key"),
            "{reason}"
        );
        // --by-key stays accepted; a count still caps the devices.
        f.by_key = true;
        f.gpus = Gpus::Count(1);
        assert_eq!(decide(&f).name(), "record");
        f.gpus = Gpus::Count(2);
        f.devices = Ok(vec!["0".into(), "1".into(), "2".into()]);
        assert!(
            matches!(decide(&f), Decision::Sweep { ref devices, by_key: true, .. } if devices.len() == 2)
        );
        // One device listed twice is one device: one process records, by key or not (a
        // visibility variable's `0,0`; --by-key refuses `--devices 0,0` itself).
        f.gpus = Gpus::Unset;
        f.devices = Ok(vec!["0".into(), "0".into()]);
        for by_key in [false, true] {
            f.by_key = by_key;
            let d = decide(&f);
            assert_eq!(d.name(), "record", "by key {by_key}: {d:?}");
            assert!(
                d.reason().contains("one device (0, listed 2 times)"),
                "{d:?}"
            );
        }
        // Without the harness there is no recording: by key on one device is plain, saying so.
        let mut bare = f.clone();
        bare.harness = sweeping().harness;
        bare.gpus = Gpus::Count(2);
        let said = decide(&bare).reason().to_owned();
        assert!(
            said.contains("one device (0, listed 2 times); by key each device runs one child"),
            "{said}"
        );
        // With a shape file and not by key, two children share the device, as ever.
        f.by_key = false;
        f.shape_file = sweeping().shape_file;
        f.gpus = Gpus::Count(2);
        f.prediction = Prediction::NotAsked;
        assert!(
            matches!(decide(&f), Decision::Sweep { ref devices, by_key: false, .. } if devices.len() == 2)
        );
    }

    #[test]
    fn where_the_harness_is_no_gpu_count_means_every_visible_device() {
        let mut f = with_harness(sweeping());
        f.gpus = Gpus::Unset;
        let Decision::Sweep {
            devices, by_key, ..
        } = decide(&f)
        else {
            panic!("{:?}", decide(&f));
        };
        assert_eq!(
            (devices.len(), by_key),
            (2, false),
            "a shape file is split as ever"
        );
        f.devices = Err("no devices found".into());
        f.record_folder = RecordFolder::Cache("/c".into());
        assert!(decide(&f).reason().contains("no GPU count"), "one process");
    }

    #[test]
    fn without_the_harness_no_shape_file_stays_plain_with_its_line() {
        let mut f = sweeping();
        f.shape_file = None;
        assert!(reason(&f).contains("no --shape_file"));
        f.gpus = Gpus::Unset;
        assert!(reason(&f).contains("no GPU count"));
        // The harness, but a replay already pinned: the plugin's rules.
        let mut f = with_harness(sweeping());
        f.shape_file = None;
        f.replay_dir_set = true;
        assert!(reason(&f).contains("no --shape_file"));
    }
}
