//! Whether a warmup pays, decided from the op's history before anything runs: the warmup's wall
//! time against the plain run's, predicted from what the last sweep measured
//! (docs/CONTRACT.md, "Deciding from history", gives the summary it prints). Here because
//! two tools predict alike: warmup-plan (which decides) and `warmup-costs --predict` (which prints
//! the figures for a person).
//!
//! With T the sum of every key's tuning seconds, C the children's compile seconds, S their longest
//! start-up, c the shapes' measured costs (their sum T + M, M the benchmark's own time), k
//! children on D distinct devices:
//!
//! - plain  = S + (T - C) + M: a re-run, whose compile cache is warm by then;
//! - warmup = S + max(LPT makespan over k children of the c less their share of C, (T - C) / D)
//!   plus M plus [`FIXED_SECONDS`]: the measurement starts with the sweep (one start-up), timing
//!   is serialized per device, and the measurement then replays (M) after merge and publish.
//!
//! C is held to at most T; a cost's share of C is c times C / sum c; k = min(devices listed,
//! shapes costed), and the warmup pays when `saving = 1 - warmup / plain` is at least [`WORTH`].
//!
//! Assumptions. The run being decided is a re-run whose Triton compile cache is warm (the
//! children share the caller's cache, so the last sweep filled it): no compiling is left in
//! either run; a cold cache (a cleared or new `TRITON_CACHE_DIR`, another machine) makes the plain
//! run slower than predicted and the warmup's saving larger, so the prediction errs towards
//! running plain. The measurement starts with the sweep, so its start-up, imports and collection
//! overlap the sweep and one S is paid. Every timing holds the device's lock, so tuning on one
//! GPU does not get faster for more children on it. Costs add up within a child (crate::costs).
//! The tuning seconds include a child's wait for the device lock while sharing a GPU, so a history
//! of `--devices 0,0` overstates T - C, by at most the waiting. The op's shapes are the ones the
//! last sweep swept: a shape file changed since predicts from the old shapes.

use crate::history::{self, History};
use crate::probe::Platform;
use std::path::Path;

/// Merge and publish between the sweep and the measurement, and the hand-over to it, in seconds
/// (BENCHMARKS.md, "Deciding from history": 0.04 to 0.06 s for both, measured with the release
/// build on the shared 2-core development machine; the rest allows for a slower disk and for
/// the measurement noticing the published record).
pub const FIXED_SECONDS: f64 = 0.25;
/// The least saving, as a fraction of the plain run, for which the warmup is worth running.
pub const WORTH: f64 = 0.10;

/// The prediction and the figures it was made from, in seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    pub plain: f64,
    pub warmup: f64,
    /// 1 - warmup / plain: the fraction of the plain run saved (negative: the warmup is slower).
    pub saving: f64,
    pub startup: f64,
    pub timing: f64,
    pub measure: f64,
    pub makespan: f64,
    pub children: usize,
    pub devices: usize,
}

impl Figures {
    pub fn worth(&self) -> bool {
        self.saving >= WORTH
    }

    /// Why these figures cannot decide anything: a history whose numbers add up past what a
    /// float holds (`inf`, then `NaN` for the saving) predicts nothing; None when all are finite.
    pub fn unusable(&self) -> Option<String> {
        let figures = [
            ("plain", self.plain),
            ("warmup", self.warmup),
            ("saving", self.saving),
            ("startup", self.startup),
            ("timing", self.timing),
            ("measure", self.measure),
            ("sweep", self.makespan),
        ];
        let bad: Vec<String> = figures
            .iter()
            .filter(|(_, v)| !v.is_finite())
            .map(|(name, v)| format!("{name} {v}"))
            .collect();
        (!bad.is_empty()).then(|| {
            format!(
                "its figures add up past the largest number a sum can hold ({})",
                bad.join(", ")
            )
        })
    }
}

/// The prediction for `op` swept on the devices `tokens` (repeats: children sharing a device).
pub fn predict(history: &History, op: &str, tokens: &[String]) -> Figures {
    let meta = &history.meta;
    let mut costs: Vec<f64> = history.costs.costs(op).into_values().collect();
    costs.sort_by(|a, b| b.total_cmp(a));
    let summed: f64 = costs.iter().sum();
    let tune = meta.tune_seconds;
    let compile = meta.compile_seconds.unwrap_or(0.0).min(tune);
    let startup = meta.startup_seconds.unwrap_or(0.0);
    let timing = tune - compile;
    let measure = (summed - tune).max(0.0);
    let children = tokens.len().min(costs.len()).max(1);
    let mut distinct: Vec<&String> = tokens.iter().collect();
    distinct.sort();
    distinct.dedup();
    let devices = distinct.len().max(1);
    // Each shape's share of compiling in proportion to its cost: none of it is paid again.
    let keep = if summed > 0.0 {
        (1.0 - compile / summed).max(0.0)
    } else {
        0.0
    };
    let makespan = lpt_makespan(costs.iter().map(|c| c * keep), children);
    let plain = startup + timing + measure;
    let warmup = startup + makespan.max(timing / devices as f64) + measure + FIXED_SECONDS;
    let saving = if plain > 0.0 {
        1.0 - warmup / plain
    } else {
        0.0
    };
    Figures {
        plain,
        warmup,
        saving,
        startup,
        timing,
        measure,
        makespan,
        children,
        devices,
    }
}

/// The largest load when costs, largest first, each go onto the least loaded of k shards.
fn lpt_makespan(costs: impl Iterator<Item = f64>, k: usize) -> f64 {
    let mut loads = vec![0.0f64; k.max(1)];
    for c in costs {
        if let Some(least) = loads.iter_mut().min_by(|a, b| a.total_cmp(b)) {
            *least += c;
        }
    }
    loads.into_iter().fold(0.0, f64::max)
}

/// The op's history in `dir` and its prediction for the devices `tokens`, when it can predict:
/// made on this run's Triton and device model (`platform`, asked only once there is a sidecar), with at
/// least one key's tuning seconds, and figures that are finite; else why not, for a line on stderr.
pub fn usable(
    dir: &Path,
    op: &str,
    platform: impl FnOnce() -> Platform,
    tokens: &[String],
) -> Result<(History, Figures), String> {
    let history = history::find(dir, op, platform)?;
    if history.meta.keys == 0 {
        return Err(format!(
            "{} has no key's tune_seconds to predict from",
            history.meta.path.display()
        ));
    }
    let f = predict(&history, op, tokens);
    match f.unusable() {
        Some(why) => Err(format!("{}: {why}", history.meta.path.display())),
        None => Ok((history, f)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::costs::CostFile;
    use crate::history::Meta;

    fn history(tune: f64, compile: f64, startup: f64, costs: &[f64]) -> History {
        let body: Vec<String> = costs
            .iter()
            .enumerate()
            .map(|(i, c)| format!("\"[{i}]\": {c}"))
            .collect();
        let json = format!("{{\"mm\": {{{}}}}}", body.join(", "));
        History {
            meta: Meta {
                path: "m.json".into(),
                triton: None,
                device: None,
                tune_seconds: tune,
                keys: costs.len(),
                startup_seconds: Some(startup),
                compile_seconds: Some(compile),
                complete_for: None,
            },
            costs: CostFile::parse(Path::new("c.json"), &json).expect("costs"),
        }
    }

    fn devices(list: &str) -> Vec<String> {
        list.split(',').map(str::to_owned).collect()
    }

    #[test]
    fn a_warm_rerun_on_one_gpu_does_not_pay_and_on_two_it_does() {
        // Issue 16's compile-heavy mm, its history from the cold run: 8 shapes, T 79.8 s of
        // which 56.7 s compiling, start-up 9 s, the benchmark's own time 7.7 s.
        let h = history(79.8, 56.7, 9.0, &[10.9; 8]);
        let one = predict(&h, "mm", &devices("0,0"));
        assert!((one.plain - (9.0 + 23.1 + 7.4)).abs() < 0.01, "{one:?}");
        assert!(!one.worth(), "{one:?}");
        let two = predict(&h, "mm", &devices("0,1"));
        assert!(two.worth(), "{two:?}");
        assert_eq!((two.children, two.devices), (2, 2));
    }

    #[test]
    fn shapes_that_dwarf_the_rest_bound_the_sweep() {
        let h = history(100.0, 0.0, 1.0, &[90.0, 5.0, 5.0, 5.0]);
        let f = predict(&h, "mm", &devices("0,1,2,3"));
        assert!((f.makespan - 90.0).abs() < 1e-9, "{f:?}");
        assert!(!f.worth());
    }

    #[test]
    fn figures_that_overflow_are_unusable_never_inf_or_nan() {
        // Each number is finite; their sums are not (1.7e308 twice is inf, inf - inf is NaN).
        let h = history(1.7e308, 0.0, 1.7e308, &[11.0; 4]);
        let f = predict(&h, "mm", &devices("0,1"));
        let why = f.unusable().expect("unusable");
        assert!(why.contains("plain inf"), "{why}");
        assert!(why.contains("saving NaN"), "{why}");
        let fine = predict(&history(40.0, 0.0, 2.0, &[11.0; 4]), "mm", &devices("0,1"));
        assert_eq!(fine.unusable(), None);
    }
}
