//! warmup-merge driven as a process: bad inputs are named and skipped, `--strict` refuses them,
//! and the exit statuses follow the contract.

use assert_cmd::Command;
use assert_fs::prelude::*;
use assert_fs::TempDir;
use predicates::prelude::*;
use predicates::str::contains;

fn merge() -> Command {
    let mut cmd = Command::cargo_bin("warmup-merge").expect("binary built");
    for (key, _) in std::env::vars() {
        if key.starts_with("FLAGGEMS_") || key.starts_with("PARALLEL_WARMUP_") {
            cmd.env_remove(key);
        }
    }
    cmd
}

const GOOD: &str = r#"{"k": {"a": 1}}"#;

fn with_good(dir: &TempDir) -> String {
    dir.child("good.json").write_str(GOOD).expect("write");
    dir.child("good.json").path().display().to_string()
}

fn skips(content: &[u8], reason: &str) {
    let dir = TempDir::new().expect("tempdir");
    let good = with_good(&dir);
    dir.child("bad.json").write_binary(content).expect("write");
    let bad = dir.child("bad.json");
    merge()
        .arg(&good)
        .arg(bad.path())
        .assert()
        .code(0)
        .stdout("{\n  \"k\": {\n    \"a\": 1\n  }\n}\n")
        .stderr(
            contains("bad.json")
                .and(contains(reason))
                .and(contains("skipped")),
        );
    merge()
        .arg("--strict")
        .arg(&good)
        .arg(bad.path())
        .assert()
        .code(2)
        .stdout("")
        .stderr(contains("--strict"));
}

#[test]
fn an_empty_file_is_skipped() {
    skips(b"", "empty file");
}

#[test]
fn binary_garbage_is_skipped() {
    skips(b"\xff\xfe\x00garbage", "not UTF-8");
}

#[test]
fn torn_json_is_skipped_with_line_and_column() {
    skips(b"{\"k\": {\"a\": [1, 2", "bad.json:1:18: ");
}

#[test]
fn an_array_top_level_is_skipped() {
    skips(b"[1, 2]", "top level is an array");
}

#[test]
fn a_bucket_that_is_not_an_object_is_skipped() {
    skips(br#"{"x": 3}"#, "kernel \"x\" holds an integer");
}

#[test]
fn a_missing_file_is_skipped() {
    let dir = TempDir::new().expect("tempdir");
    let good = with_good(&dir);
    merge()
        .arg(&good)
        .arg(dir.child("missing.json").path())
        .assert()
        .code(0)
        .stderr(contains("missing.json: cannot read"));
    merge()
        .args(["--strict", &good])
        .arg(dir.child("missing.json").path())
        .assert()
        .code(2);
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

#[test]
fn no_input_is_a_usage_error() {
    merge().assert().code(2).stderr(contains("INPUT"));
}

#[test]
fn a_missing_output_folder_is_exit_2() {
    let dir = TempDir::new().expect("tempdir");
    let good = with_good(&dir);
    merge()
        .arg(&good)
        .arg("-o")
        .arg(dir.child("no/out.json").path())
        .assert()
        .code(2)
        .stderr(contains("does not exist"));
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
        .env("FLAGGEMS_PERF_CURRENT_OP", "mm")
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
fn two_outputs_on_stdout_or_in_scratch_with_o_are_usage_errors() {
    let dir = TempDir::new().expect("tempdir");
    let good = with_good(&dir);
    merge()
        .args(["--summary", "-", &good])
        .assert()
        .code(2)
        .stdout("")
        .stderr(contains("-o and --summary all go to stdout"));
    merge()
        .args([
            "--in-scratch",
            &dir.path().display().to_string(),
            "-o",
            "x.json",
        ])
        .assert()
        .code(2)
        .stderr(contains("--in-scratch"));
}
