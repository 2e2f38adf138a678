//! `warmup-costs --predict`: the prediction from the op's history, by the model warmup-plan
//! decides with (`protocol::predict`), as a run summary on stdout, one line for people on
//! stderr, and the exit status (0: the warmup pays, 3: it would not).

use crate::{Args, TOOL};
use anyhow::{Context, Result};
use protocol::predict::{self, Figures};
use std::io::Write;
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
            write!(out, "version 1\nop {op}\ndecision warmup\n")
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
    let text = summary(op, &f, &history.meta.path.display().to_string());
    out.write_all(text.as_bytes())
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
fn summary(op: &str, f: &Figures, history: &str) -> String {
    format!(
        "version 1\nop {op}\nplain_seconds {:.2}\nwarmup_seconds {:.2}\nsaving {:.3}\n\
         decision {}\nstartup_seconds {:.2}\ntiming_seconds {:.2}\nmeasure_seconds {:.2}\n\
         sweep_seconds {:.2}\nchildren {}\ndevices {}\nhistory {history}\n",
        f.plain,
        f.warmup,
        f.saving,
        if f.worth() { "warmup" } else { "plain" },
        f.startup,
        f.timing,
        f.measure,
        f.makespan.max(f.timing / f.devices as f64),
        f.children,
        f.devices,
    )
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
        let text = summary("mm", &f, "/r/mm.meta.json");
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
