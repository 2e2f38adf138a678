//! warmup-publish driven as a process: bad MERGED files and command lines are exit 2 with
//! nothing written, zero configs is exit 3, and the record file is replaced whole.

use assert_cmd::Command;
use assert_fs::prelude::*;
use assert_fs::TempDir;
use predicates::prelude::*;
use predicates::str::contains;

fn publish() -> Command {
    testkit::tool(env!("CARGO_BIN_EXE_warmup-publish"))
}

const MERGED: &str = "{\n  \"k\": {\n    \"a\": NaN\n  }\n}\n";

/// Every MERGED warmup-publish refuses: what it holds and what the message must say.
const BAD_FILES: &[(&[u8], &str)] = &[
    (b"", "m.json: empty file"),
    (b"\x00\x9f\x92", "not UTF-8"),
    (b"{\"k\": {\"a\": 1", "m.json:1:14: expecting ',' delimiter"),
    (b"[]", "top level is an array"),
    (br#"{"k": "x"}"#, "kernel \"k\" holds a string"),
];

#[test]
fn bad_merged_files_are_refused_and_nothing_is_written() {
    for (content, reason) in BAD_FILES {
        let dir = TempDir::new().expect("tempdir");
        dir.child("m.json").write_binary(content).expect("write");
        let rec = dir.child("rec");
        publish()
            .arg("--record-dir")
            .arg(rec.path())
            .arg(dir.child("m.json").path())
            .assert()
            .code(2)
            .stdout("")
            .stderr(contains(*reason).and(contains("warmup-merge")));
        rec.assert(predicate::path::missing());
    }
}

/// Command lines refused before anything is written, MERGED on stdin, and what the message
/// must say. `{d}` is the test's folder.
const BAD_ARGS: &[(&[&str], &str)] = &[
    (&["--record-dir", "{d}/rec", "{d}/none.json"], "none.json"),
    (&["--record-dir", "{d}/rec", "{d}/scratch"], "is a folder"),
    (&["--record-dir", "{d}/rec", "{d}"], "--in-scratch"),
    (
        &["--record-dir", "{d}/rec", "--op", "../x", "-"],
        "plain name",
    ),
    (
        &["--format", "make", "--record-dir", "{d}/a\nb", "-"],
        "newline",
    ),
    (
        &["--record-dir", "{d}/rec", "--no-such-flag", "-"],
        "warmup-publish: error:",
    ),
    (
        &["-"],
        "give --record-dir DIR, set FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR, or give --fallback-dir",
    ),
];

#[test]
fn bad_command_lines_are_exit_2_and_write_nothing() {
    let dir = TempDir::new().expect("tempdir");
    dir.child("scratch/merged.json")
        .create_dir_all()
        .expect("a folder where merged.json should be");
    let d = dir.path().display().to_string();
    for (args, message) in BAD_ARGS {
        publish()
            .args(args.iter().map(|a| a.replace("{d}", &d)))
            .write_stdin(MERGED)
            .assert()
            .code(2)
            .stdout("")
            .stderr(contains(*message));
        dir.child("rec").assert(predicate::path::missing());
        dir.child("a\nb").assert(predicate::path::missing());
    }
}

#[test]
fn zero_configs_is_exit_3_and_writes_nothing() {
    let dir = TempDir::new().expect("tempdir");
    publish()
        .arg("--record-dir")
        .arg(dir.child("rec").path())
        .arg("-")
        .write_stdin("{\"k\": {}}")
        .assert()
        .code(3)
        .stdout("");
    dir.child("rec").assert(predicate::path::missing());
}

#[test]
fn the_record_variable_wins_over_the_fallback_and_blank_is_unset() {
    let dir = TempDir::new().expect("tempdir");
    let (env_dir, fallback) = (dir.child("env"), dir.child("fb"));
    for (record_var, op, file) in [
        (
            env_dir.path().to_str().expect("UTF-8"),
            " mm ",
            env_dir.child("mm.json"),
        ),
        ("  ", "", fallback.child("default.json")),
    ] {
        publish()
            .env("FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR", record_var)
            .env("FLAGGEMS_PERF_CURRENT_OP", op)
            .arg("--fallback-dir")
            .arg(fallback.path())
            .arg("-")
            .write_stdin(MERGED)
            .assert()
            .code(0)
            .stderr(contains(file.path().display().to_string()));
        file.assert(MERGED);
    }
}

#[test]
fn publishing_replaces_the_file_whole_and_leaves_no_temporary() {
    let dir = TempDir::new().expect("tempdir");
    let rec = dir.child("rec");
    rec.child("mm.json").write_str("old").expect("seed");
    publish()
        .args(["--op", "mm", "--format", "json", "--record-dir"])
        .arg(rec.path())
        .arg("-")
        .write_stdin(MERGED)
        .assert()
        .code(0)
        .stdout(contains("\"file\": ").and(contains("mm.json")));
    rec.child("mm.json").assert(MERGED);
    let mut names: Vec<_> = std::fs::read_dir(rec.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    names.sort();
    // The record and the lock the op's record sessions share; no temporary.
    assert_eq!(names, [".mm.lock", "mm.json"]);
}

#[test]
fn a_scratch_folder_publishes_its_merged_json() {
    let dir = TempDir::new().expect("tempdir");
    dir.child("run/merged.json")
        .write_str(MERGED)
        .expect("merged");
    let rec = dir.child("rec");
    publish()
        .args(["--op", "mm", "--record-dir"])
        .arg(rec.path())
        .arg(dir.child("run").path())
        .assert()
        .code(0);
    rec.child("mm.json").assert(MERGED);
}
