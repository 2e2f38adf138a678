//! `--op OP`, the op every tool works on: one clap argument for all of them, so that each reads
//! [`CURRENT_OP`] and trims it by the same rule, and checks it against a plan's op alike.

use crate::env::{CURRENT_OP, DEFAULT_OP};
use crate::plan::Plan;
use anyhow::{bail, Result};
use std::path::Path;

/// `--op OP`, one argument for every tool (`#[command(flatten)]`), so that each reads
/// [`CURRENT_OP`] and trims it by the same rule, and each `--help` says so alike.
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct OpArg {
    /// The op: its entry in the shape file, its record file <op>.json. Trimmed; blank means
    /// unset [default: the plan's op where a plan is read, else "default"]
    #[arg(long = "op", value_name = "OP", env = CURRENT_OP)]
    op: Option<String>,
}

impl OpArg {
    /// `--op` as if given as `op` (`None`: not given), for callers of a tool's `run`.
    pub fn new(op: Option<&str>) -> Self {
        OpArg {
            op: op.map(str::to_owned),
        }
    }

    /// The op given by `--op` or [`CURRENT_OP`], trimmed; `None` when unset or blank.
    pub fn given(&self) -> Option<&str> {
        self.op
            .as_deref()
            .map(str::trim)
            .filter(|op| !op.is_empty())
    }

    /// The op as the harness derives it: the one given, else [`DEFAULT_OP`].
    pub fn name(&self) -> &str {
        self.given().unwrap_or(DEFAULT_OP)
    }

    /// The plan's op, checked against the one given, if any: the records and shards of another
    /// op than the plan's would be the wrong ones.
    pub fn for_plan<'p>(&self, plan: &'p Plan, plan_path: &Path) -> Result<&'p str> {
        match self.given() {
            Some(op) if op != plan.op => bail!(
                "{}: the plan is for op {:?}, not {op:?}; drop --op (and {CURRENT_OP}) or give \
                 the matching op",
                plan_path.display(),
                plan.op
            ),
            _ => Ok(&plan.op),
        }
    }
}

/// The names a record folder gives other files of an op beside its `<op>.json`: an op ending in
/// one would have its record land on another op's sidecar or cost file (`mm.meta` on `mm`'s).
pub const SIBLING_SUFFIXES: [&str; 2] = [".meta", ".costs"];

/// Why `op` cannot name its files in a record folder (`<op>.json`, `<op>.meta.json`,
/// `<op>.costs.json`, `.<op>.journal`), or `None` when it can. The harness applies the same rule
/// (warmup_harness/env.py, `op_file_problem`), checked against this one by tests/test_harness_files.py.
pub fn file_name_problem(op: &str) -> Option<&'static str> {
    if op.contains(['/', '\0']) {
        Some("it holds '/' or NUL, and would name a file outside the record folder")
    } else if op == "." || op == ".." {
        Some("'.' and '..' name folders, not files")
    } else if SIBLING_SUFFIXES.iter().any(|suffix| op.ends_with(suffix)) {
        Some("an op ending in '.meta' or '.costs' would write over another op's sidecar or cost file")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blank_op_means_default() {
        assert_eq!(OpArg::new(None).name(), "default");
        assert_eq!(OpArg::new(Some("  \t")).name(), "default");
        assert_eq!(OpArg::new(Some("  \t")).given(), None);
        assert_eq!(OpArg::new(Some(" mm \n")).name(), "mm");
    }

    #[test]
    fn an_op_that_cannot_name_its_own_files_is_refused() {
        for bad in ["a/b", "..", ".", "mm.meta", "mm.costs", "a\0b"] {
            assert!(file_name_problem(bad).is_some(), "{bad:?}");
        }
        for good in [
            "mm",
            "a..b",
            ".mm",
            "mm.json",
            "meta",
            "mm.metadata",
            "default",
        ] {
            assert_eq!(file_name_problem(good), None, "{good:?}");
        }
    }
}
