//! `warmup-costs --predict`: the decision a script acts on, from the op's history
//! (`protocol::history`) and the model (`predict`), as a run summary on stdout, one line for people on stderr, and the
//! exit status (0: the warmup runs, 3: run plain).

use crate::predict;
use crate::{Args, TOOL};
use anyhow::{Context, Result};
use protocol::history;
use std::io::Write;
use toolkit::Status;

/// `--predict`: the run summary on stdout, a line on stderr; exit 0 when the warmup saves at
/// least [`predict::WORTH`] of the plain run or no history can say, 3 when it would not.
pub fn run(args: &Args) -> Result<Status> {
    let op = args.op.name();
    let Some(dir) = &args.record_dir else {
        anyhow::bail!("--predict needs --record-dir DIR, the records of an earlier run");
    };
    let tokens = args.here.tokens();
    if tokens.is_empty() {
        anyhow::bail!("--predict needs --devices LIST, the devices the sweep would run on (0,1; 0,0 shares one)");
    }
    let mut out = std::io::stdout().lock();
    let found = history::find(dir, op, || args.here.find()).and_then(|h| {
        if h.meta.keys == 0 {
            return Err(format!(
                "{} has no key's tune_seconds to predict from",
                h.meta.path.display()
            ));
        }
        let f = predict::predict(&h, op, &tokens);
        match f.unusable() {
            Some(why) => Err(format!("{}: {why}", h.meta.path.display())),
            None => Ok((h, f)),
        }
    });
    let (history, f) = match found {
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
    let text = predict::summary(op, &f, &history.meta.path.display().to_string());
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
