//! `warmup-costs --predict`: the prediction from the op's history, by the model warmup-plan
//! decides with (`protocol::predict`), as a run summary on stdout, one line for people on
//! stderr, and the exit status (0: the warmup pays, 3: it would not).

use crate::{Args, TOOL};
use anyhow::{Context, Result};
use protocol::predict::{self, Figures};
use protocol::summary::{key, Summary};
use std::io::Write;
use std::path::Path;
use toolkit::Status;

/// `--predict`: the run summary on stdout, a line on stderr; exit 0 when the warmup saves at
/// least [`predict::WORTH`] of the plain run or no history can say, 3 when it would not.
pub fn run(args: &Args) -> Result<Status> {
    let op = args.op.name();
    let Some(dir) = &args.record_dir else {
        anyhow::bail!("--predict needs --record-dir DIR, the records of an earlier run");
    };
    let tokens = args.platform.tokens();
    if tokens.is_empty() {
        anyhow::bail!("--predict needs --devices LIST, the devices the sweep would run on (0,1; 0,0 shares one)");
    }
    let mut out = std::io::stdout().lock();
    let (history, f) = match predict::usable(dir, op, || args.platform.find(), &tokens) {
        Ok(found) => found,
        Err(why) => {
            eprintln!("{TOOL}: op {op}: no usable history ({why}): nothing to predict from, the warmup runs");
            let mut text = Summary::new();
            text.path(key::OP, &[], Path::new(op))?
                .value(key::DECISION, "warmup");
            out.write_all(text.bytes())
                .and_then(|()| out.flush())
                .context("writing to stdout")?;
            return Ok(Status::Done);
        }
    };
    for (figure, value) in [
        ("startup_seconds", history.meta.startup_seconds),
        ("compile_seconds", history.meta.compile_seconds),
    ] {
        if value.is_none() {
            eprintln!(
                "{TOOL}: {} has no {figure}: counted as 0",
                history.meta.path.display()
            );
        }
    }
    let text = summary(op, &f, &history.meta.path)?;
    out.write_all(text.bytes())
        .and_then(|()| out.flush())
        .context("writing to stdout")?;
    let verdict = if f.worth() {
        "the warmup runs"
    } else {
        "under 10%: run plain"
    };
    eprintln!(
        "{TOOL}: op {op}: predicted {:.1} s with the warmup against {:.1} s plain (saving {:.0}%) on {} children over {} device(s), from {}: {verdict}",
        f.warmup,
        f.plain,
        f.saving * 100.0,
        f.children,
        f.devices,
        history.meta.path.display()
    );
    Ok(if f.worth() {
        Status::Done
    } else {
        Status::NothingToDo
    })
}

/// The prediction as a run summary (docs/CONTRACT.md, "Run summaries").
fn summary(op: &str, f: &Figures, history: &Path) -> Result<Summary> {
    let seconds = |s: f64| format!("{s:.2}");
    let mut out = Summary::new();
    out.path(key::OP, &[], Path::new(op))?
        .value(key::PLAIN_SECONDS, seconds(f.plain))
        .value(key::WARMUP_SECONDS, seconds(f.warmup))
        .value(key::SAVING, format!("{:.3}", f.saving))
        .value(key::DECISION, if f.worth() { "warmup" } else { "plain" })
        .value(key::STARTUP_SECONDS, seconds(f.startup))
        .value(key::TIMING_SECONDS, seconds(f.timing))
        .value(key::MEASURE_SECONDS, seconds(f.measure))
        .value(
            key::SWEEP_SECONDS,
            seconds(f.makespan.max(f.timing / f.devices as f64)),
        )
        .value(key::CHILDREN, f.children)
        .value(key::DEVICES, f.devices)
        .path(key::HISTORY, &[], history)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_is_a_run_summary() {
        let f = Figures {
            plain: 46.0,
            warmup: 13.25,
            saving: 1.0 - 13.25 / 46.0,
            startup: 2.0,
            timing: 40.0,
            measure: 4.0,
            makespan: 11.0,
            children: 4,
            devices: 4,
        };
        let text = summary("mm", &f, Path::new("/r/mm.meta.json")).expect("no newline");
        let text = String::from_utf8_lossy(text.bytes());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "version 1");
        assert!(lines.contains(&"decision warmup"), "{text}");
        assert!(lines.contains(&"history /r/mm.meta.json"), "{text}");
        assert!(
            lines.iter().any(|l| l.starts_with("plain_seconds 46.00")),
            "{text}"
        );
    }
}
