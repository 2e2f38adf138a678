//! warmup-merge driven as a process: bad inputs are named and skipped, `--strict` refuses them,
//! outputs are written all or none, and the exit statuses follow the contract.

use assert_cmd::Command;
use assert_fs::prelude::*;
use assert_fs::TempDir;
use predicates::prelude::*;
use predicates::str::contains;

fn merge() -> Command {
    testkit::tool(env!("CARGO_BIN_EXE_warmup-merge"))
}

const GOOD: &str = r#"{"k": {"a": 1}}"#;
const GOOD_MERGED: &str = "{\n  \"k\": {\n    \"a\": 1\n  }\n}\n";

fn with_good(dir: &TempDir) -> String {
    dir.child("good.json").write_str(GOOD).expect("write");
    dir.child("good.json").path().display().to_string()
}

/// What an input holds: bytes, nothing (missing), or a folder without a plan.
enum Input {
    Bytes(&'static [u8]),
    Missing,
    Folder,
}

/// Every input warmup-merge skips (and `--strict` refuses), and what the message must say.
const SKIPPED: &[(Input, &str)] = &[
    (Input::Bytes(b""), "bad: empty file"),
    (Input::Bytes(b"\xff\xfe\x00garbage"), "not UTF-8"),
    (Input::Bytes(b"{\"k\": {\"a\": [1, 2"), "bad:1:18: "),
    (Input::Bytes(b"[1, 2]"), "top level is an array"),
    (
        Input::Bytes(br#"{"x": 3}"#),
        "kernel \"x\" holds an integer",
    ),
    (Input::Missing, "bad: cannot read"),
    (Input::Folder, "folder without plan.json"),
];

#[test]
fn bad_inputs_are_named_and_skipped_and_strict_refuses_them() {
    for (input, reason) in SKIPPED {
        let dir = TempDir::new().expect("tempdir");
        let good = with_good(&dir);
        let bad = dir.child("bad");
        match input {
            Input::Bytes(content) => bad.write_binary(content).expect("write"),
            Input::Missing => {}
            Input::Folder => bad.create_dir_all().expect("mkdir"),
        }
        merge()
            .arg(&good)
            .arg(bad.path())
            .assert()
            .code(0)
            .stdout(GOOD_MERGED)
            .stderr(contains(*reason).and(contains("skipped")));
        let out = dir.child("out.json");
        merge()
            .arg("--strict")
            .arg(&good)
            .arg(bad.path())
            .arg("-o")
            .arg(out.path())
            .assert()
            .code(2)
            .stdout("")
            .stderr(contains("--strict"));
        out.assert(predicate::path::missing());
    }
}

/// Command lines refused before anything is read: exit 2, nothing written, and the message.
/// `{d}` is the test's folder, `{good}` a good record file.
const REFUSED: &[(&[&str], &str)] = &[
    (&[], "warmup-merge: error:"),
    (&["--no-such-flag", "{good}"], "warmup-merge: error:"),
    (&["-o", "{d}/no/out.json", "{good}"], "does not exist"),
    (&["-o", "{d}", "{good}"], "is a folder"),
    (
        &["--summary", "-", "{good}"],
        "-o and --summary all go to stdout",
    ),
    (
        &["--conflicts", "-", "{good}"],
        "-o and --conflicts all go to stdout",
    ),
    (&["--in-scratch", "{d}", "-o", "x.json"], "--in-scratch"),
];

/// Two outputs on one file, however spelled: refused like [`REFUSED`].
const ONE_FILE: &[&[&str]] = &[
    &["-o", "{d}/x", "--conflicts", "{d}/x", "{good}"],
    &[
        "-o",
        "{d}/real/x",
        "--summary",
        "{d}/link/../real/x",
        "{good}",
    ],
    &["-o", "{d}/real/x", "--conflicts", "{d}/link/x", "{good}"],
    &[
        "--in-scratch",
        "{d}",
        "--summary",
        "{d}/merged.json",
        "{good}",
    ],
];

fn refused(cases: &[(&[&str], &str)]) {
    let dir = TempDir::new().expect("tempdir");
    let good = with_good(&dir);
    let d = dir.path().display().to_string();
    dir.child("real").create_dir_all().expect("mkdir");
    std::os::unix::fs::symlink(dir.child("real").path(), dir.child("link").path())
        .expect("symlink");
    for (args, message) in cases {
        let args: Vec<String> = args
            .iter()
            .map(|a| a.replace("{d}", &d).replace("{good}", &good))
            .collect();
        let before = listing(dir.path());
        merge()
            .args(&args)
            .assert()
            .code(2)
            .stdout("")
            .stderr(contains(*message));
        assert_eq!(listing(dir.path()), before, "{args:?} wrote something");
    }
}

#[test]
fn usage_errors_are_exit_2_and_write_nothing() {
    refused(REFUSED);
}

#[test]
fn two_outputs_on_one_file_are_refused() {
    let cases: Vec<(&[&str], &str)> = ONE_FILE.iter().map(|a| (*a, "are one file")).collect();
    refused(&cases);
}

/// Every path under `dir`, for a before/after comparison.
fn listing(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).expect("list") {
            let path = entry.expect("entry").path();
            if path.is_dir() && !path.is_symlink() {
                todo.push(path.clone());
            }
            out.push(path);
        }
    }
    out.sort();
    out
}

#[test]
fn no_configs_is_exit_3_and_writes_only_the_summary() {
    let dir = TempDir::new().expect("tempdir");
    dir.child("e.json")
        .write_str(r#"{"k": {}}"#)
        .expect("write");
    let (out, summary) = (dir.child("out.json"), dir.child("s.txt"));
    merge()
        .arg(dir.child("e.json").path())
        .arg("-o")
        .arg(out.path())
        .arg("--summary")
        .arg(summary.path())
        .assert()
        .code(3)
        .stdout("")
        .stderr(contains("no configs recovered"));
    out.assert(predicate::path::missing());
    summary.assert("version 1\ninputs 1\nrecovered 1\nkernels 1\nconfigs 0\nconflicts 0\n");
}

fn scratch(dir: &TempDir, op: &str) {
    let plan = format!(
        r#"{{"version": 1, "op": "{op}", "source": "/s.yaml", "strategy": "round-robin", "shapes": 3,
  "shards": [{{"index": 0, "shape_file": "w0/shapes.yaml", "shapes": [0, 2]}},
             {{"index": 1, "shape_file": "w1/shapes.yaml", "shapes": [1]}},
             {{"index": 2, "shape_file": "w2/shapes.yaml", "shapes": []}}]}}"#
    );
    dir.child("plan.json").write_str(&plan).expect("plan");
    dir.child(format!("w0/rec/{op}.json"))
        .write_str(r#"{"k": {"a": 1, "b": 2}}"#)
        .expect("w0");
    dir.child(format!("w1/rec/{op}.json"))
        .write_str(r#"{"k": {"b": 3, "c": 4}}"#)
        .expect("w1");
}

#[test]
fn a_scratch_folder_reads_shards_in_order_and_points_at_dead_shards_logs() {
    let dir = TempDir::new().expect("tempdir");
    scratch(&dir, "mm");
    let conflicts = dir.child("conflicts.json");
    merge()
        .arg(dir.path())
        .arg("--conflicts")
        .arg(conflicts.path())
        .assert()
        .code(0)
        .stdout("{\n  \"k\": {\n    \"a\": 1,\n    \"b\": 2,\n    \"c\": 4\n  }\n}\n")
        .stderr(
            contains("w2/rec/mm.json: cannot read")
                .and(contains("w2/worker.log"))
                .and(contains("w2/status.json"))
                .and(contains("1 conflicting key")),
        );
    let text = std::fs::read_to_string(conflicts.path()).expect("conflicts written");
    assert!(
        text.contains("\"shard\": 1") && text.contains("\"value\": 3"),
        "{text}"
    );
}

#[test]
fn an_op_other_than_the_plans_is_exit_2() {
    let dir = TempDir::new().expect("tempdir");
    scratch(&dir, "mm");
    merge()
        .args(["--op", "bmm"])
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(contains("not \"bmm\""));
    merge()
        .env("FLAGGEMS_PERF_CURRENT_OP", " mm ")
        .arg(dir.path())
        .assert()
        .code(0);
}

#[test]
fn no_conflicts_writes_an_empty_list() {
    let dir = TempDir::new().expect("tempdir");
    let good = with_good(&dir);
    let conflicts = dir.child("c.json");
    merge()
        .args([&good, &good])
        .arg("--conflicts")
        .arg(conflicts.path())
        .assert()
        .code(0)
        .stderr(contains("no conflicting keys"));
    conflicts.assert("[]\n");
}

#[test]
fn in_scratch_writes_the_layouts_files_and_the_summary_on_stdout() {
    let dir = TempDir::new().expect("tempdir");
    scratch(&dir, "mm");
    let root = dir.path().display().to_string();
    // Shard 0 was cut short by warmup-spawn's stop yet exited 0: stopped, by the one rule.
    for (i, interrupted) in [(0, true), (1, false)] {
        dir.child(format!("w{i}/status.json"))
            .write_str(&status_json(i, interrupted))
            .expect("status");
    }
    merge()
        .args(["--in-scratch", &root, "--summary", "-"])
        .assert()
        .code(0)
        .stdout(format!(
            "version 1\ninputs 3\nrecovered 2\nkernels 1\nconfigs 3\nconflicts 1\n\
             merged {root}/merged.json\nconflicts_file {root}/conflicts.json\n\
             shard 0 stopped {root}/w0/worker.log\nshard 1 ok {root}/w1/worker.log\n\
             shard 2 not_started {root}/w2/worker.log\n"
        ));
    dir.child("merged.json")
        .assert("{\n  \"k\": {\n    \"a\": 1,\n    \"b\": 2,\n    \"c\": 4\n  }\n}\n");
    dir.child("conflicts.json")
        .assert(predicate::str::contains("\"shard\": 1"));
}

#[test]
fn the_summary_reads_back_by_the_type_warmup_spawn_reads_it_with() {
    let dir = TempDir::new().expect("tempdir");
    scratch(&dir, "mm");
    dir.child("w1/status.json")
        .write_str(&status_json(1, false))
        .expect("status");
    let out = merge()
        .args([
            "--in-scratch",
            &dir.path().display().to_string(),
            "--summary",
            "-",
        ])
        .output()
        .expect("runs");
    let read = protocol::summary::MergeSummary::read(&out.stdout).expect("a merge summary");
    assert_eq!(
        (
            read.inputs,
            read.recovered,
            read.kernels,
            read.configs,
            read.conflicts
        ),
        (3, 2, 1, 3, 1)
    );
    assert_eq!(read.merged, Some(dir.path().join("merged.json")));
    assert_eq!(read.conflicts_file, Some(dir.path().join("conflicts.json")));
    let shards: Vec<(usize, &str)> = read
        .shards
        .iter()
        .map(|s| (s.index, s.outcome.word()))
        .collect();
    assert_eq!(shards, [(0, "not_started"), (1, "ok"), (2, "not_started")]);
}

/// Shard i's status.json as warmup-spawn writes it for a child that exited 0.
fn status_json(i: usize, interrupted: bool) -> String {
    format!(
        r#"{{"shard": {i}, "device": "0", "pid": 9, "exit_code": 0, "signal": null,
  "signal_name": null, "timed_out": false, "interrupted": {interrupted},
  "started_at": "2024-01-01T00:00:00.000Z", "seconds": 1.0, "argv": ["pytest"],
  "env": {{"set": {{}}, "unset": []}}, "log": "w{i}/worker.log"}}"#
    )
}

#[test]
fn with_no_configs_the_summary_still_judges_every_shard_and_a_torn_status_is_failed() {
    let dir = TempDir::new().expect("tempdir");
    scratch(&dir, "mm");
    for i in 0..2 {
        dir.child(format!("w{i}/rec/mm.json"))
            .write_str("{}")
            .expect("empty record");
    }
    dir.child("w0/status.json")
        .write_str(&status_json(0, false))
        .expect("status");
    dir.child("w1/status.json")
        .write_str("{\"shard\": 1, \"exi")
        .expect("torn");
    let root = dir.path().display().to_string();
    merge()
        .args(["--in-scratch", &root, "--summary", "-"])
        .assert()
        .code(3)
        .stdout(format!(
            "version 1\ninputs 3\nrecovered 2\nkernels 0\nconfigs 0\nconflicts 0\n\
             shard 0 ok {root}/w0/worker.log\nshard 1 failed {root}/w1/worker.log\n\
             shard 2 not_started {root}/w2/worker.log\n"
        ))
        .stderr(
            contains("w1/status.json: not a status file")
                .and(contains("shard 1 counted as failed")),
        );
}

#[test]
fn an_output_that_cannot_be_written_leaves_the_others_unwritten() {
    let dir = TempDir::new().expect("tempdir");
    let good = with_good(&dir);
    let out = dir.child("out.json");
    // /proc exists, so the check before reading passes, but no file can be made there, not even
    // by root: the write itself fails, after -o's was written.
    for late in [
        ["--conflicts", "/proc/warmup-merge-test.json"],
        ["--summary", "/proc/warmup-merge-test.txt"],
    ] {
        out.write_str("old").expect("seed");
        merge()
            .arg(&good)
            .arg("-o")
            .arg(out.path())
            .args(late)
            .assert()
            .code(2)
            .stdout("")
            .stderr(contains("/proc"));
        out.assert("old");
        assert_eq!(listing(dir.path()).len(), 2, "temporaries left behind");
    }
}
