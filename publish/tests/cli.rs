//! warmup-publish driven as a process: bad MERGED files and missing folders are exit 2 with
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
const REFUSED: &[(&[u8], &str)] = &[
    (b"", "m.json: empty file"),
    (b"\x00\x9f\x92", "not UTF-8"),
    (b"{\"k\": {\"a\": 1", "m.json:1:14: expecting ',' delimiter"),
    (b"[]", "top level is an array"),
    (br#"{"k": "x"}"#, "kernel \"k\" holds a string"),
];

#[test]
fn bad_merged_files_are_refused_and_nothing_is_written() {
    for (content, reason) in REFUSED {
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

#[test]
fn a_missing_merged_file_or_a_folder_in_its_place_is_refused() {
    let dir = TempDir::new().expect("tempdir");
    dir.child("merged.json").create_dir_all().expect("mkdir");
    publish()
        .args(["--record-dir", "r"])
        .arg(dir.child("none.json").path())
        .assert()
        .code(2)
        .stderr(contains("none.json"));
    publish()
        .args(["--record-dir", "r"])
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(contains("is a folder"));
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
fn no_record_folder_is_exit_2_saying_how_to_give_one() {
    publish()
        .arg("-")
        .write_stdin(MERGED)
        .assert()
        .code(2)
        .stderr(contains("--record-dir").and(contains("--fallback-dir")));
}

#[test]
fn the_record_variable_wins_over_the_fallback_and_blank_is_unset() {
    let dir = TempDir::new().expect("tempdir");
    let (env_dir, fallback) = (dir.child("env"), dir.child("fb"));
    publish()
        .env("FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR", env_dir.path())
        .env("FLAGGEMS_PERF_CURRENT_OP", " mm ")
        .arg("--fallback-dir")
        .arg(fallback.path())
        .arg("-")
        .write_stdin(MERGED)
        .assert()
        .code(0);
    env_dir.child("mm.json").assert(MERGED);
    publish()
        .env("FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR", "  ")
        .arg("--fallback-dir")
        .arg(fallback.path())
        .arg("-")
        .write_stdin(MERGED)
        .assert()
        .code(0)
        .stderr(contains("default.json"));
    fallback.child("default.json").assert(MERGED);
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
    let names: Vec<_> = std::fs::read_dir(rec.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names, ["mm.json"]);
}

#[test]
fn a_make_fragment_cannot_carry_a_newline_and_writes_nothing() {
    let dir = TempDir::new().expect("tempdir");
    let rec = dir.child("a\nb");
    publish()
        .args(["--format", "make", "--record-dir"])
        .arg(rec.path())
        .arg("-")
        .write_stdin(MERGED)
        .assert()
        .code(2)
        .stderr(contains("newline"));
    rec.assert(predicate::path::missing());
}

#[test]
fn an_op_with_a_slash_is_refused() {
    publish()
        .args(["--op", "../x", "--record-dir", "r", "-"])
        .write_stdin(MERGED)
        .assert()
        .code(2)
        .stderr(contains("plain name"));
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
    publish()
        .args(["--record-dir", "r"])
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(contains("merged.json").and(contains("--in-scratch")));
}
