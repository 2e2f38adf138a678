//! warmup-publish driven as a process: bad MERGED files and command lines are exit 2 with
//! nothing written, zero configs is exit 3, the record file is replaced whole, and the replay
//! environment names the op where one was given.

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

/// A temporary folder holding an empty record folder, `rec`.
fn record_folder() -> (TempDir, assert_fs::fixture::ChildPath) {
    let dir = TempDir::new().expect("tempdir");
    let rec = dir.child("rec");
    rec.create_dir_all().expect("mkdir");
    (dir, rec)
}

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
fn the_replay_environment_names_the_op_given_in_every_format_and_none_when_none_was() {
    let (_dir, rec) = record_folder();
    let publish_as = |op: Option<&str>, var: &str, format: &str| {
        let mut cmd = publish();
        cmd.args(op.map(|op| ["--op", op]).iter().flatten())
            .env("FLAGGEMS_PERF_CURRENT_OP", var)
            .args(["--format", format, "--record-dir"])
            .arg(rec.path())
            .arg("-")
            .write_stdin(MERGED)
            .assert()
            .code(0)
    };
    // (--op, FLAGGEMS_PERF_CURRENT_OP, format, what stdout must hold)
    let named = [
        (
            Some("mm"),
            "",
            "sh",
            "\nexport FLAGGEMS_PERF_CURRENT_OP=mm\n",
        ),
        (
            None,
            " addmm ",
            "make",
            "\nexport FLAGGEMS_PERF_CURRENT_OP := addmm\n",
        ),
        (
            Some("bmm"),
            "",
            "json",
            "\"FLAGGEMS_PERF_CURRENT_OP\": \"bmm\"",
        ),
    ];
    for (op, var, format, line) in named {
        publish_as(op, var, format).stdout(contains(line));
    }
    for format in ["sh", "make", "json"] {
        publish_as(None, "  ", format).stdout(
            contains("FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR").and(contains("CURRENT_OP").not()),
        );
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
        .stdout(contains("\"file\": ").and(contains("mm.json")))
        .stderr(contains("it was not a record, so none of it is kept"));
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

/// A record `{"k": {"<i>": {"kwargs": {"B": <i>}}}}` for every i in `keys`, as a text.
fn record(keys: impl IntoIterator<Item = usize>, block: usize) -> String {
    let body: Vec<String> = keys
        .into_iter()
        .map(|i| format!("\"{i}\": {{\"kwargs\": {{\"B\": {}}}}}", i + block))
        .collect();
    format!("{{\"k\": {{{}}}}}", body.join(", "))
}

fn read_record(path: &std::path::Path) -> serde_json::Map<String, serde_json::Value> {
    let text = std::fs::read_to_string(path).expect("record");
    let value: serde_json::Value = serde_json::from_str(&text).expect("json");
    value["k"].as_object().expect("kernel k").clone()
}

fn publish_into(rec: &std::path::Path, merged: &str) -> assert_cmd::assert::Assert {
    publish()
        .args(["--op", "mm", "--record-dir"])
        .arg(rec)
        .arg("-")
        .write_stdin(merged.to_owned())
        .assert()
}

#[test]
fn a_publish_keeps_every_key_of_the_record_there_and_its_own_configs_win() {
    // A stopped sweep (or a --fresh one) published over a 3000-key record: 100 keys re-tuned to
    // other configs, one new; the 2900 it never met stay.
    let (_dir, rec) = record_folder();
    rec.child("mm.json")
        .write_str(&record(0..3000, 0))
        .expect("seed");
    publish_into(rec.path(), &record((0..100).chain([5000]), 7))
        .success()
        .stderr(contains(
            "wrote 1 kernel(s), 3001 key(s) (1 kernel(s), 101 key(s) from this run, 2900 \
             key(s) kept from the record there, which this run did not decide)",
        ));
    let k = read_record(&rec.child("mm.json"));
    assert_eq!(k.len(), 3001);
    assert_eq!(k["5"]["kwargs"]["B"], 12, "the new config wins");
    assert_eq!(
        k["2999"]["kwargs"]["B"], 2999,
        "a key the run never met stays"
    );
    assert_eq!(k["5000"]["kwargs"]["B"], 5007);
}

#[test]
fn two_publishes_into_one_folder_at_once_lose_neither_runs_keys() {
    let (dir, rec) = record_folder();
    let exe = env!("CARGO_BIN_EXE_warmup-publish");
    for round in 0..8 {
        let runs: Vec<std::process::Child> = (0..2)
            .map(|run| {
                let merged = dir.child(format!("m{round}-{run}.json"));
                let first = (round * 2 + run) * 10;
                merged
                    .write_str(&record(first..first + 10, 0))
                    .expect("merged");
                std::process::Command::new(exe)
                    .args(["--op", "mm", "--record-dir"])
                    .arg(rec.path())
                    .arg(merged.path())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .expect("spawn")
            })
            .collect();
        for mut run in runs {
            assert!(run.wait().expect("wait").success());
        }
    }
    assert_eq!(read_record(&rec.child("mm.json")).len(), 160);
}

#[test]
fn a_record_there_that_is_no_record_is_replaced_with_a_line() {
    let (_dir, rec) = record_folder();
    rec.child("mm.json").write_str("{torn").expect("seed");
    publish_into(rec.path(), MERGED)
        .success()
        .stderr(contains("mm.json:1:2:").and(contains("none of it is kept")));
    rec.child("mm.json").assert(MERGED);
}

const JOURNAL: &str = concat!(
    r#"{"kernel": "k", "key": "j", "config": {"kwargs": {"B": 3}}, "seconds": 1.5}"#,
    "\n",
    r#"{"kernel": "k", "key": "a", "config": {"kwargs": {"B": 4}}, "seconds": 2.0}"#,
    "\n",
);

#[test]
fn a_killed_sessions_journal_is_kept_in_the_published_record_and_removed() {
    let (_dir, rec) = record_folder();
    rec.child(".mm.journal")
        .write_str(JOURNAL)
        .expect("journal");
    publish_into(rec.path(), "{\"k\": {\"a\": {\"kwargs\": {\"B\": 9}}}}")
        .success()
        .stderr(contains("removed").and(contains(".mm.journal, the unfolded keys of a killed record session (2 key(s), kept in the published record)")));
    rec.child(".mm.journal").assert(predicate::path::missing());
    let k = read_record(&rec.child("mm.json"));
    assert_eq!(k["j"]["kwargs"]["B"], 3, "the journal's key is kept");
    assert_eq!(k["a"]["kwargs"]["B"], 9, "the published config wins");
}

#[test]
fn a_live_sessions_journal_is_left_to_it() {
    use nix::fcntl::{Flock, FlockArg};
    let (_dir, rec) = record_folder();
    rec.child(".mm.journal")
        .write_str(JOURNAL)
        .expect("journal");
    // What a live record session holds for its whole life.
    let sessions = std::fs::File::create(rec.child(".mm.sessions").path()).expect("sessions");
    let _live = Flock::lock(sessions, FlockArg::LockSharedNonblock).expect("shared lock");
    publish_into(rec.path(), "{\"k\": {\"a\": {\"kwargs\": {\"B\": 9}}}}")
        .success()
        .stderr(contains("left").and(contains("a record session is live")));
    rec.child(".mm.journal").assert(JOURNAL);
    let k = read_record(&rec.child("mm.json"));
    assert!(!k.contains_key("j"), "a live session folds its own keys");
}

#[test]
fn a_link_planted_as_the_lock_or_the_sessions_file_is_refused_and_never_written_through() {
    for planted in [".mm.lock", ".mm.sessions"] {
        let (dir, rec) = record_folder();
        rec.child(".mm.journal")
            .write_str(JOURNAL)
            .expect("journal");
        let victim = dir.child("victim");
        victim.write_str("precious").expect("victim");
        std::os::unix::fs::symlink(victim.path(), rec.child(planted).path()).expect("symlink");
        let gone = dir.child("gone");
        std::os::unix::fs::symlink(gone.path(), rec.child(".bmm.lock").path()).expect("symlink");
        publish_into(rec.path(), MERGED).code(2).stderr(format!(
            "warmup-publish: {} is a symbolic link, which the tools never write through: remove it\n",
            rec.child(planted).path().display()
        ));
        victim.assert("precious");
        rec.child("mm.json").assert(predicate::path::missing());
        rec.child(".mm.journal").assert(JOURNAL);
        let publish_bmm = publish()
            .args(["--op", "bmm", "--record-dir"])
            .arg(rec.path())
            .arg("-")
            .write_stdin(MERGED)
            .assert();
        publish_bmm.code(2);
        gone.assert(predicate::path::missing());
    }
}

#[test]
fn the_ops_costs_of_an_earlier_run_go_with_the_record_they_described() {
    let (_dir, rec) = record_folder();
    // Only the op's costs: the file goes.
    rec.child("mm.costs.json")
        .write_str(r#"{"mm": {"[1]": 2.0}}"#)
        .expect("costs");
    publish_into(rec.path(), MERGED).success().stderr(contains(
        "mm.costs.json, the earlier run's costs, which the published sidecar does not describe",
    ));
    rec.child("mm.costs.json")
        .assert(predicate::path::missing());
    // Another op's costs in it too: only the op's entry goes.
    rec.child("mm.costs.json")
        .write_str(r#"{"mm": {"[1]": 2.0}, "bmm": {"[2]": 3.0}}"#)
        .expect("costs");
    publish_into(rec.path(), MERGED)
        .success()
        .stderr(contains("removed op mm's costs from"));
    let left: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(rec.child("mm.costs.json").path()).expect("costs"),
    )
    .expect("json");
    assert_eq!(left, serde_json::json!({"bmm": {"[2]": 3.0}}));
}
