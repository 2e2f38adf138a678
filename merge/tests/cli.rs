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

/// Every input warmup-merge skips (and `--strict` refuses): what the file holds, and what the
/// message must say about it. `None` is a file that is not there; `Some(None)` a folder.
const SKIPPED: &[(&str, Option<&[u8]>, &str)] = &[
    ("an empty file", Some(b""), "bad:"),
    ("binary garbage", Some(b"\xff\xfe\x00garbage"), "not UTF-8"),
    ("torn JSON", Some(b"{\"k\": {\"a\": [1, 2"), "bad:1:18: "),
    ("an array", Some(b"[1, 2]"), "top level is an array"),
    (
        "a bucket not an object",
        Some(br#"{"x": 3}"#),
        "kernel \"x\" holds an integer",
    ),
    ("a missing file", None, "bad: cannot read"),
];

#[test]
fn bad_inputs_are_named_and_skipped_and_strict_refuses_them() {
    for (what, content, reason) in SKIPPED {
        let dir = TempDir::new().expect("tempdir");
        let good = with_good(&dir);
        let bad = dir.child("bad");
        if let Some(content) = content {
            bad.write_binary(content).expect("write");
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
        let _ = what;
    }
}

#[test]
fn a_folder_without_plan_is_skipped() {
    let dir = TempDir::new().expect("tempdir");
    let good = with_good(&dir);
    dir.child("sub").create_dir_all().expect("mkdir");
    merge()
        .arg(&good)
        .arg(dir.child("sub").path())
        .assert()
        .code(0)
        .stderr(contains("folder without plan.json"));
}

/// Command lines refused before anything is read: exit 2, nothing written, and the message.
#[test]
fn usage_errors_are_exit_2_and_write_nothing() {
    let dir = TempDir::new().expect("tempdir");
    let good = with_good(&dir);
    let d = dir.path().display().to_string();
    dir.child("real").create_dir_all().expect("mkdir");
    std::os::unix::fs::symlink(dir.child("real").path(), dir.child("link").path())
        .expect("symlink");
    let cases: &[(&[&str], &str)] = &[
        (&[], "warmup-merge: error:"),
        (&["--no-such-flag", &good], "warmup-merge: error:"),
        (
            &["-o", &format!("{d}/no/out.json"), &good],
            "does not exist",
        ),
        (&["-o", &d, &good], "is a folder"),
        (
            &["--summary", "-", &good],
            "-o and --summary all go to stdout",
        ),
        (
            &["--conflicts", "-", &good],
            "-o and --conflicts all go to stdout",
        ),
        (&["--in-scratch", &d, "-o", "x.json"], "--in-scratch"),
        (
            &[
                "-o",
                &format!("{d}/x"),
                "--conflicts",
                &format!("{d}/x"),
                &good,
            ],
            "are one file",
        ),
        (
            &[
                "-o",
                &format!("{d}/real/x"),
                "--summary",
                &format!("{d}/link/../real/x"),
                &good,
            ],
            "are one file",
        ),
        (
            &[
                "-o",
                &format!("{d}/real/x"),
                "--conflicts",
                &format!("{d}/link/x"),
                &good,
            ],
            "are one file",
        ),
    ];
    for (args, message) in cases {
        let before = listing(dir.path());
        merge()
            .args(*args)
            .assert()
            .code(2)
            .stdout("")
            .stderr(contains(*message));
        assert_eq!(listing(dir.path()), before, "{args:?} wrote something");
    }
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
fn no_configs_is_exit_3_and_writes_nothing() {
    let dir = TempDir::new().expect("tempdir");
    dir.child("e.json")
        .write_str(r#"{"k": {}}"#)
        .expect("write");
    let out = dir.child("out.json");
    merge()
        .arg(dir.child("e.json").path())
        .arg("-o")
        .arg(out.path())
        .assert()
        .code(3)
        .stderr(contains("no configs recovered"));
    out.assert(predicate::path::missing());
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
    merge()
        .args(["--in-scratch", &root, "--summary", "-"])
        .assert()
        .code(0)
        .stdout(format!(
            "version 1\ninputs 3\nrecovered 2\nkernels 1\nconfigs 3\nconflicts 1\n\
             merged {root}/merged.json\nconflicts_file {root}/conflicts.json\n"
        ));
    dir.child("merged.json")
        .assert("{\n  \"k\": {\n    \"a\": 1,\n    \"b\": 2,\n    \"c\": 4\n  }\n}\n");
    dir.child("conflicts.json")
        .assert(predicate::str::contains("\"shard\": 1"));
}

#[test]
fn a_summary_file_is_written_when_nothing_was_recovered() {
    let dir = TempDir::new().expect("tempdir");
    dir.child("e.json")
        .write_str(r#"{"k": {}}"#)
        .expect("write");
    let summary = dir.child("s.txt");
    merge()
        .arg(dir.child("e.json").path())
        .arg("--summary")
        .arg(summary.path())
        .assert()
        .code(3)
        .stdout("");
    summary.assert("version 1\ninputs 1\nrecovered 1\nkernels 1\nconfigs 0\nconflicts 0\n");
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
