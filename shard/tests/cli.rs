//! warmup-shard as a process: exit statuses, what it prints, what it writes and what it leaves.

use assert_cmd::Command;
use assert_fs::prelude::*;
use assert_fs::TempDir;
use predicates::prelude::*;
use std::path::Path;

const SHAPES: &str = "mm:\n  shapes:\n    - [1, 2]\n    - [3, 4]\n    - [5, 6]\n  shape_desc: M, N\nbmm:\n  shapes: [[1]]\n";

fn shard() -> Command {
    let mut cmd = Command::cargo_bin("warmup-shard").expect("binary is built");
    for (key, _) in std::env::vars() {
        if key.starts_with("FLAGGEMS_") || key.starts_with("PARALLEL_WARMUP_") {
            cmd.env_remove(key);
        }
    }
    cmd
}

fn source(dir: &TempDir, text: &str) -> std::path::PathBuf {
    let file = dir.child("shapes.yaml");
    file.write_str(text).expect("write source");
    file.path().to_path_buf()
}

fn assert_nothing_written(out: &Path) {
    assert!(!out.exists(), "{} was created", out.display());
}

#[test]
fn stdout_lists_one_shard_file_per_line_and_the_plan_records_them() {
    let dir = TempDir::new().expect("tempdir");
    let src = source(&dir, SHAPES);
    let out = dir.path().join("run");
    shard()
        .args(["--op", "mm", "--shards", "2", "--out"])
        .arg(&out)
        .arg(&src)
        .assert()
        .success()
        .stdout(format!(
            "{}\n{}\n",
            out.join("w0/shapes.yaml").display(),
            out.join("w1/shapes.yaml").display()
        ));
    let (plan, _) = protocol::plan::Plan::load(&out.join("plan.json")).expect("plan loads");
    assert_eq!(plan.op, "mm");
    assert_eq!(plan.strategy, "round-robin");
    assert_eq!(plan.shapes, 3);
    assert_eq!(plan.source, src.canonicalize().expect("abs"));
    let picked: Vec<Vec<usize>> = plan.shards.iter().map(|s| s.shapes.clone()).collect();
    assert_eq!(picked, vec![vec![0, 2], vec![1]]);
    let w1 = std::fs::read_to_string(out.join("w1/shapes.yaml")).expect("shard 1");
    assert!(w1.contains("    - [3, 4]\n"), "{w1}");
    assert!(w1.contains("shape_desc: \"M, N\""), "{w1}");
}

#[test]
fn the_op_comes_from_the_environment_trimmed_when_no_flag() {
    let dir = TempDir::new().expect("tempdir");
    let src = source(&dir, SHAPES);
    let out = dir.path().join("run");
    shard()
        .env("FLAGGEMS_PERF_CURRENT_OP", "  mm \n")
        .args(["--shards", "5", "--out"])
        .arg(&out)
        .arg(&src)
        .assert()
        .success();
    assert!(out.join("w2/shapes.yaml").exists() && !out.join("w3").exists());
}

#[test]
fn a_missing_op_is_an_input_error_listing_the_ops() {
    let dir = TempDir::new().expect("tempdir");
    let src = source(&dir, SHAPES);
    let out = dir.path().join("run");
    shard()
        .args(["--op", "addmm", "--shards", "2", "--out"])
        .arg(&out)
        .arg(&src)
        .assert()
        .code(2)
        .stdout("")
        .stderr(
            predicate::str::contains("warmup-shard: ")
                .and(predicate::str::contains("ops in this file: mm, bmm")),
        );
    assert_nothing_written(&out);
}

#[test]
fn one_shape_or_one_shard_is_nothing_to_do() {
    let dir = TempDir::new().expect("tempdir");
    let src = source(&dir, SHAPES);
    let out = dir.path().join("run");
    for (op, n) in [("bmm", "4"), ("mm", "1")] {
        shard()
            .args(["--op", op, "--shards", n, "--out"])
            .arg(&out)
            .arg(&src)
            .assert()
            .code(3)
            .stdout("")
            .stderr(predicate::str::contains("fewer than 2 shards"));
        assert_nothing_written(&out);
    }
}

#[test]
fn zero_shards_is_a_usage_error() {
    let dir = TempDir::new().expect("tempdir");
    let src = source(&dir, SHAPES);
    shard()
        .args(["--op", "mm", "--shards", "0", "--out"])
        .arg(dir.path().join("run"))
        .arg(&src)
        .assert()
        .code(2);
}

#[test]
fn bad_inputs_are_errors_naming_the_file_and_write_nothing() {
    let dir = TempDir::new().expect("tempdir");
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty.yaml", Vec::new(), "empty file"),
        (
            "garbage.yaml",
            vec![0xff, 0xfe, 0x00, 0x81, 0x13],
            "not UTF-8",
        ),
        ("ctrl.yaml", b"mm:\x01\n".to_vec(), "control character"),
        (
            "list.yaml",
            b"- a\n- b\n".to_vec(),
            "top level is not a mapping",
        ),
        ("scalar_op.yaml", b"mm: 3\n".to_vec(), "is not a mapping"),
        (
            "no_shapes.yaml",
            b"mm:\n  other: 1\n".to_vec(),
            "no \"shapes\" list",
        ),
        (
            "shapes_map.yaml",
            b"mm:\n  shapes: {a: 1}\n".to_vec(),
            "\"shapes\" is not a list",
        ),
        (
            "tuple.yaml",
            b"mm:\n  shapes: [!!python/tuple [1], 2]\n".to_vec(),
            "tuple.yaml:2:",
        ),
        (
            "two_docs.yaml",
            b"mm: {shapes: [1, 2]}\n---\nx: 1\n".to_vec(),
            "second YAML document",
        ),
        (
            "unhashable.yaml",
            b"mm: {shapes: [1, 2], [1]: 2}\n".to_vec(),
            "cannot hash",
        ),
        (
            "bad_int.yaml",
            b"mm: {shapes: [!!int \"abc\", 2]}\n".to_vec(),
            "not a valid !!int",
        ),
        (
            "syntax.yaml",
            b"mm: {shapes: [1, 2}\n".to_vec(),
            "syntax.yaml:1:",
        ),
    ];
    for (name, bytes, message) in cases {
        let file = dir.child(name);
        file.write_binary(&bytes).expect("write");
        let out = dir.path().join(format!("out-{name}"));
        shard()
            .args(["--op", "mm", "--shards", "2", "--out"])
            .arg(&out)
            .arg(file.path())
            .assert()
            .code(2)
            .stdout("")
            .stderr(predicate::str::contains(message).and(predicate::str::contains(name)));
        assert_nothing_written(&out);
    }
    let out = dir.path().join("out-dir");
    shard()
        .args(["--op", "mm", "--shards", "2", "--out"])
        .arg(&out)
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is a directory"));
    shard()
        .args(["--op", "mm", "--shards", "2", "--out"])
        .arg(&out)
        .arg(dir.path().join("missing.yaml"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("missing.yaml"));
    assert_nothing_written(&out);
}

#[test]
fn a_rerun_replaces_the_plan_and_removes_only_stale_shard_folders() {
    let dir = TempDir::new().expect("tempdir");
    let text = format!(
        "mm:\n  shapes:\n{}",
        (0..6).map(|i| format!("    - [{i}]\n")).collect::<String>()
    );
    let src = source(&dir, &text);
    let out = dir.path().join("run");
    let run = |n: &str| {
        shard()
            .args(["--op", "mm", "--shards", n, "--out"])
            .arg(&out)
            .arg(&src)
            .assert()
    };
    run("5").success();
    std::fs::create_dir_all(out.join("keep")).expect("mkdir");
    std::fs::create_dir_all(out.join("w9x")).expect("mkdir");
    // What the earlier run's child 1 left: none of it may pass for the next run's.
    std::fs::create_dir_all(out.join("w1/rec")).expect("mkdir");
    std::fs::create_dir_all(out.join("w1/.triton_cache")).expect("mkdir");
    for stale in ["w1/rec/mm.json", "w1/worker.log", "w1/status.json"] {
        std::fs::write(out.join(stale), "{}").expect("seed");
    }
    run("2")
        .success()
        .stderr(predicate::str::contains("replaced the plan").and(predicate::str::contains("w4")));
    for i in 2..5 {
        assert!(!out.join(format!("w{i}")).exists(), "w{i} is stale");
    }
    assert!(
        out.join("w1/shapes.yaml").exists()
            && out.join("keep").exists()
            && out.join("w9x").exists()
    );
    for stale in ["w1/rec", "w1/worker.log", "w1/status.json"] {
        assert!(!out.join(stale).exists(), "{stale} survived the rerun");
    }
    assert!(
        out.join("w1/.triton_cache").is_dir(),
        "the compile cache is kept"
    );
    let (plan, _) = protocol::plan::Plan::load(&out.join("plan.json")).expect("plan");
    assert_eq!(plan.shards.len(), 2);
}

#[test]
fn help_shows_examples_and_exit_statuses() {
    shard()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("EXAMPLES").and(predicate::str::contains("EXIT STATUS")));
}
