//! `--op OP`, the op every tool works on: one clap argument for all of them, so that each reads
//! [`CURRENT_OP`] and trims it by the same rule, and checks it against a shard plan's op alike;
//! and [`derive`], the op of a run whose user names none (warmup-plan), taken from COMMAND's
//! words.

use crate::env::{CURRENT_OP, DEFAULT_OP};
use crate::shard_plan::ShardPlan;
use anyhow::{bail, Result};
use std::ffi::{OsStr, OsString};
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

    /// The shard plan's op, checked against the one given, if any: the records and shards of
    /// another op than the shard plan's would be the wrong ones.
    pub fn for_shard_plan<'p>(&self, plan: &'p ShardPlan, plan_path: &Path) -> Result<&'p str> {
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
/// `<op>.costs.json`, `.<op>.journal`), or `None` when it can; judged on its bytes, so that a
/// name that is not UTF-8 is judged alike. The harness applies the same rule
/// (warmup_harness/env.py, `op_file_problem`), checked against this one by tests/test_harness_files.py.
pub fn file_name_problem(op: impl AsRef<OsStr>) -> Option<&'static str> {
    let op = op.as_ref().as_encoded_bytes();
    if op.contains(&b'/') || op.contains(&0) {
        Some("it holds '/' or NUL, and would name a file outside the record folder")
    } else if op == b"." || op == b".." {
        Some("'.' and '..' name folders, not files")
    } else if SIBLING_SUFFIXES
        .iter()
        .any(|suffix| op.ends_with(suffix.as_bytes()))
    {
        Some("an op ending in '.meta' or '.costs' would write over another op's sidecar or cost file")
    } else {
        None
    }
}

/// Whether `op` can name its files in a record folder: not empty, and no [`file_name_problem`].
pub fn valid(op: impl AsRef<OsStr>) -> bool {
    !op.as_ref().is_empty() && file_name_problem(op).is_none()
}

/// The op whose record a file of a record folder is (`<op>.json`: `mm.json` is op `mm`'s), or
/// `None` for any other file (a sidecar, a cost file, `.json`): the ops a folder records, as
/// warmup-cache lists them and the harness names them (warmup_harness/env.py,
/// `op_of_record_file`, checked against this one by tests/test_protocol_agreement.py).
pub fn of_record_file(name: &OsStr) -> Option<&OsStr> {
    use std::os::unix::ffi::OsStrExt;
    let op = OsStr::from_bytes(name.as_bytes().strip_suffix(b".json")?);
    valid(op).then_some(op)
}

/// An op named on a command line as it was given, bytes that are not UTF-8 kept (warmup-cache
/// `--op`, a clap value parser): trimmed as [`OpArg`] trims, and refused when blank or when it
/// cannot name its files ([`file_name_problem`]); `Err` says why.
pub fn os_name(given: OsString) -> Result<OsString, String> {
    let op = match given.to_str() {
        Some(text) => OsString::from(text.trim()),
        None => {
            use std::os::unix::ffi::OsStrExt;
            OsStr::from_bytes(given.as_encoded_bytes().trim_ascii()).to_os_string()
        }
    };
    if op.is_empty() {
        return Err("blank: give the op's name, such as mm".into());
    }
    match file_name_problem(&op) {
        Some(why) => Err(format!("not an op's name: {why}")),
        None => Ok(op),
    }
}

/// A run's op and where it came from, for the opening line (`op mm (from -m mm)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Derived {
    pub name: String,
    /// Why this op: `from FLAGGEMS_PERF_CURRENT_OP`, `from -m mm`, ...
    pub why: String,
}

impl std::fmt::Display for Derived {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "op {} ({})", self.name, self.why)
    }
}

/// The op of a run: the one given ([`CURRENT_OP`]), else the single bare marker name of a pytest
/// COMMAND (`-m mm`: the test FlagGems' benchmark names by its op), else, where COMMAND names no
/// shape file, the stem of its first test file less a leading `test_` ([`file_op`]), else
/// [`DEFAULT_OP`] (a shape file's entry is the op: `default`, as ever).
pub fn derive(given: Option<&str>, command: &[OsString]) -> Derived {
    let derived = |name: String, why: String| Derived { name, why };
    if let Some(op) = OpArg::new(given).given() {
        return derived(op.to_owned(), format!("from {CURRENT_OP}"));
    }
    if let Some(name) = crate::command::marker_of(command) {
        return derived(name.clone(), format!("from -m {name}"));
    }
    if crate::command::shape_file_of(command).is_none() {
        let file = crate::command::test_file_of(command);
        let op = file.as_deref().and_then(file_op);
        if let (Some(op), Some(file)) = (op, &file) {
            return derived(
                op.to_owned(),
                format!(
                    "from the test file {}; {CURRENT_OP} or -m NAME names another",
                    file.display()
                ),
            );
        }
    }
    derived(
        DEFAULT_OP.to_owned(),
        format!("neither {CURRENT_OP} nor a single -m NAME names one"),
    )
}

/// The op a test file names: its stem less a leading `test_` where more follows
/// (`benchmark/test_mm.py`, FlagGems 5.3's file of op `mm`: `mm`; 5.0's `test_blas_perf.py`, one
/// record for the file's ops: `blas_perf`), when that is a valid op starting with a letter, digit
/// or `_`.
pub fn file_op(file: &Path) -> Option<&str> {
    let stem = file.file_stem()?.to_str()?;
    let op = stem
        .strip_prefix("test_")
        .filter(|op| !op.is_empty())
        .unwrap_or(stem);
    (valid(op) && op.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')).then_some(op)
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

    fn words(w: &[&str]) -> Vec<OsString> {
        w.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_op_is_the_one_given_else_the_marker_else_the_test_file_else_default() {
        let blas = words(&[
            "pytest",
            "benchmark/test_blas_perf.py",
            "-m",
            "mm",
            "--level",
            "core",
        ]);
        assert_eq!(
            derive(Some(" addmm "), &blas).to_string(),
            "op addmm (from FLAGGEMS_PERF_CURRENT_OP)"
        );
        assert_eq!(derive(Some(" "), &blas).to_string(), "op mm (from -m mm)");
        let whole = words(&["python3", "-m", "pytest", "benchmark/test_blas_perf.py"]);
        assert_eq!(derive(None, &whole).name, "blas_perf");
        let split = words(&["pytest", "benchmark/test_mm.py::test_mm", "--level", "core"]);
        assert_eq!(
            derive(None, &split).name,
            "mm",
            "FlagGems 5.3: one file per op"
        );
        for (file, op) in [
            ("test_.py", Some("test_")),
            ("testmm.py", Some("testmm")),
            ("mm_test.py", Some("mm_test")),
            ("test__x.py", Some("_x")),
            ("test_.x.py", None),
            ("test_-x.py", None),
        ] {
            assert_eq!(file_op(Path::new(file)), op, "{file}");
        }
        assert!(derive(None, &whole)
            .why
            .contains("from the test file benchmark/test_blas_perf.py"));
        let shaped = words(&["pytest", "b.py", "--shape_file", "s.yaml"]);
        assert_eq!(
            derive(None, &shaped).name,
            "default",
            "a shape file's entry is the op"
        );
        assert_eq!(derive(None, &words(&["pytest", "..py"])).name, "default");
        assert_eq!(derive(None, &words(&["./bench.sh"])).name, "default");
    }

    #[test]
    fn an_op_given_as_bytes_is_trimmed_and_judged_by_the_same_rule() {
        use std::os::unix::ffi::OsStrExt;
        let os = |b: &[u8]| OsStr::from_bytes(b).to_os_string();
        assert_eq!(os_name(os(b" mm\n")), Ok(os(b"mm")));
        assert_eq!(
            os_name(os(b" mm\xff ")),
            Ok(os(b"mm\xff")),
            "not UTF-8, kept"
        );
        for bad in [
            &b""[..],
            b"  ",
            b"../x",
            b"a/b",
            b"..",
            b"mm.meta",
            b"\xff/x",
        ] {
            assert!(os_name(os(bad)).is_err(), "{bad:?}");
        }
        assert!(file_name_problem(os(b"\xff.costs")).is_some());
    }

    #[test]
    fn a_record_file_names_its_op_and_a_sibling_or_a_bare_suffix_names_none() {
        fn op(name: &str) -> Option<&OsStr> {
            of_record_file(OsStr::new(name))
        }
        assert_eq!(op("mm.json"), Some(OsStr::new("mm")));
        let file = crate::layout::record_file(Path::new("/r"), "mm");
        assert_eq!(
            of_record_file(file.file_name().expect("name")),
            Some(OsStr::new("mm")),
            "the name layout gives it"
        );
        assert_eq!(
            op(".mm.json"),
            Some(OsStr::new(".mm")),
            "a valid op, hidden or not"
        );
        assert_eq!(op("mm.json.json"), Some(OsStr::new("mm.json")));
        for none in [
            ".json",
            "mm.meta.json",
            "mm.costs.json",
            "..json",
            "...json",
            "mm",
            "mm.journal",
            ".mm.journal",
        ] {
            assert_eq!(op(none), None, "{none}");
        }
    }

    #[test]
    fn an_op_naming_a_path_is_no_op() {
        assert!(valid("mm") && valid("fused_moe.v2"));
        assert!(!valid("") && !valid("a/b") && !valid("..") && !valid("a\0"));
    }
}
