//! warmup-shard as a process: exit statuses, what it prints, what it writes and what it leaves.

use assert_cmd::Command;
use assert_fs::prelude::*;
use assert_fs::TempDir;
use predicates::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const SHAPES: &str = "mm:\n  shapes:\n    - [1, 2]\n    - [3, 4]\n    - [5, 6]\n  shape_desc: M, N\nbmm:\n  shapes: [[1]]\n";

fn shard() -> Command {
    testkit::tool(env!("CARGO_BIN_EXE_warmup-shard"))
}

fn source(dir: &TempDir, text: &str) -> PathBuf {
    let file = dir.child("shapes.yaml");
    file.write_str(text).expect("write source");
    file.path().to_path_buf()
}

/// `warmup-shard ARGS --out DIR/run SRC`, SRC a shape file holding `text`: the command, not
/// yet run (a test may add to its environment), the scratch it writes, and SRC.
fn split_cmd(dir: &TempDir, text: &str, args: &[&str]) -> (Command, PathBuf, PathBuf) {
    let src = source(dir, text);
    let out = dir.path().join("run");
    let mut cmd = shard();
    cmd.args(args).arg("--out").arg(&out).arg(&src);
    (cmd, out, src)
}

fn assert_nothing_written(out: &Path) {
    assert!(!out.exists(), "{} was created", out.display());
}

/// Every file and folder under `root` (relative path -> contents, `None` for a folder), but the
/// scratch lock's file, which holds the pid of whichever run took the lock last.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Option<String>> {
    let mut found = BTreeMap::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).expect("list") {
            let path = entry.expect("entry").path();
            let rel = path.strip_prefix(root).expect("inside").to_path_buf();
            if rel == Path::new(protocol::layout::LOCK) {
                continue;
            }
            if path.is_dir() {
                found.insert(rel, None);
                todo.push(path);
            } else {
                let bytes = std::fs::read(&path).expect("read");
                found.insert(rel, Some(String::from_utf8_lossy(&bytes).into_owned()));
            }
        }
    }
    found
}

#[test]
fn stdout_lists_one_shard_file_per_line_and_the_plan_records_them() {
    let dir = TempDir::new().expect("tempdir");
    let (mut cmd, out, src) = split_cmd(&dir, SHAPES, &["--op", "mm", "--shards", "2"]);
    cmd.assert().success().stdout(format!(
        "{}\n{}\n",
        out.join("w0/shapes.yaml").display(),
        out.join("w1/shapes.yaml").display()
    ));
    let (plan, _) =
        protocol::shard_plan::ShardPlan::load(&out.join("plan.json")).expect("plan loads");
    assert_eq!(plan.op, "mm");
    assert_eq!(plan.entry(), "mm");
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
    let (mut cmd, out, _) = split_cmd(&dir, SHAPES, &["--shards", "5"]);
    cmd.env("FLAGGEMS_PERF_CURRENT_OP", "  mm \n")
        .assert()
        .success();
    assert!(out.join("w2/shapes.yaml").exists() && !out.join("w3").exists());
}

const BLAS: &str = "BlasBenchmark:\n  shapes:\n    - [2, 384, 384, 384]\n    - [16, 1024, 1024, 1024]\n  shape_desc: \"B, M, N, K\"\nmv:\n  shapes: [[1, 2]]\n";

#[test]
fn an_entry_under_another_key_is_split_and_kept_under_that_key() {
    let dir = TempDir::new().expect("tempdir");
    let args = ["--op", "mm", "--entry", "BlasBenchmark", "--shards", "2"];
    let (mut cmd, out, src) = split_cmd(&dir, BLAS, &args);
    cmd.assert().success();
    let (plan, _) = protocol::shard_plan::ShardPlan::load(&out.join("plan.json")).expect("plan");
    assert_eq!((plan.op.as_str(), plan.entry()), ("mm", "BlasBenchmark"));
    let w1 = std::fs::read_to_string(out.join("w1/shapes.yaml")).expect("shard 1");
    let from = src.canonicalize().expect("abs");
    assert_eq!(
        w1,
        format!(
            "# shard 1 of 2: entry BlasBenchmark (op mm) from {} (shapes 1)\nBlasBenchmark:\n  shapes:\n    - [16, 1024, 1024, 1024]\n  shape_desc: \"B, M, N, K\"\n",
            from.display()
        )
    );
}

#[test]
fn a_missing_op_lists_the_top_level_keys_and_suggests_an_entry() {
    let dir = TempDir::new().expect("tempdir");
    let (mut cmd, out, src) = split_cmd(&dir, BLAS, &["--op", "mm", "--shards", "2"]);
    cmd.assert().code(2).stdout("").stderr(
        predicate::str::starts_with("warmup-shard: ")
            .and(predicate::str::contains("no op \"mm\""))
            .and(predicate::str::contains(
                "top-level keys: BlasBenchmark, mv",
            ))
            .and(predicate::str::contains("--entry BlasBenchmark")),
    );
    assert_nothing_written(&out);
    shard()
        .args(["--op", "mm", "--entry", "Blas", "--shards", "2", "--out"])
        .arg(&out)
        .arg(&src)
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("no top-level key \"Blas\" (--entry)").and(
                predicate::str::contains("top-level keys: BlasBenchmark, mv"),
            ),
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

/// Where a bad input comes from: bytes written to a file of that name, or a path as it is.
enum Input {
    File(&'static [u8]),
    Dir,
    Missing,
}

#[test]
fn bad_inputs_are_errors_naming_the_file_and_write_nothing() {
    use Input::*;
    let cases: &[(&str, Input, &str)] = &[
        ("empty.yaml", File(b""), "empty file"),
        (
            "garbage.yaml",
            File(&[0xff, 0xfe, 0x00, 0x81, 0x13]),
            "not UTF-8",
        ),
        ("ctrl.yaml", File(b"mm:\x01\n"), "control character"),
        (
            "list.yaml",
            File(b"- a\n- b\n"),
            "top level is not a mapping",
        ),
        ("scalar_op.yaml", File(b"mm: 3\n"), "is not a mapping"),
        (
            "no_shapes.yaml",
            File(b"mm:\n  other: 1\n"),
            "no \"shapes\" list",
        ),
        (
            "shapes_map.yaml",
            File(b"mm:\n  shapes: {a: 1}\n"),
            "\"shapes\" is not a list",
        ),
        (
            "tuple.yaml",
            File(b"mm:\n  shapes: [!!python/tuple [1], 2]\n"),
            "tuple.yaml:2:",
        ),
        (
            "two_docs.yaml",
            File(b"mm: {shapes: [1, 2]}\n---\nx: 1\n"),
            "second YAML document",
        ),
        (
            "unhashable.yaml",
            File(b"mm: {shapes: [1, 2], [1]: 2}\n"),
            "cannot hash",
        ),
        (
            "bad_int.yaml",
            File(b"mm: {shapes: [!!int \"abc\", 2]}\n"),
            "not a valid !!int",
        ),
        (
            "syntax.yaml",
            File(b"mm: {shapes: [1, 2}\n"),
            "syntax.yaml:1:",
        ),
        // What PyYAML 6.0.4's safe_load refuses, each at its place, with PyYAML's reason.
        (
            "dup_anchor.yaml",
            File(b"a: &x 1\nb: &x 2\nmm:\n  shapes: [1, 2]\n"),
            "dup_anchor.yaml:2:4: duplicate anchor &x",
        ),
        (
            "empty_key_top.yaml",
            File(b": 4\nmm:\n  shapes: [1, 2]\n"),
            "empty_key_top.yaml:1:1: expected <block end>, but found ':'",
        ),
        (
            "empty_key_op.yaml",
            File(b"mm:\n  : 3\n  shapes: [1, 2]\n"),
            "empty_key_op.yaml:2:3: expected <block end>, but found ':'",
        ),
        (
            "q_in_flow.yaml",
            File(b"mm:\n  shapes:\n    - [1?]\n    - 2\n"),
            "q_in_flow.yaml:3:9: expected ',' or ']', but got '?'",
        ),
        (
            "bar_in_flow.yaml",
            File(b"mm:\n  shapes:\n    - [|1]\n    - 2\n"),
            "bar_in_flow.yaml:3:8: found character '|' that cannot start any token",
        ),
        (
            "gt_in_flow.yaml",
            File(b"mm:\n  shapes:\n    - [>2, 3]\n    - 2\n"),
            "gt_in_flow.yaml:3:8: found character '>'",
        ),
        (
            "colon_in_flow.yaml",
            File(b"mm:\n  shapes:\n    - [1, :]\n    - 2\n"),
            "colon_in_flow.yaml:3:11: expected the node content, but found ':'",
        ),
        (
            "tab_after.yaml",
            File(b"mm:\n  shapes:\n    - [1, 2]\t\n    - 2\n"),
            "tab_after.yaml:3:13: found character '\\t'",
        ),
        (
            "dash_tab.yaml",
            File(b"mm:\n  shapes:\n    -\t[1, 2]\n    - 2\n"),
            "dash_tab.yaml:3:6: found character '\\t'",
        ),
        ("a_folder", Dir, "is a directory"),
        ("missing.yaml", Missing, "missing.yaml"),
    ];
    let dir = TempDir::new().expect("tempdir");
    for (name, input, message) in cases {
        let path = dir.path().join(name);
        match input {
            File(bytes) => std::fs::write(&path, bytes).expect("write"),
            Dir => std::fs::create_dir(&path).expect("mkdir"),
            Missing => {}
        }
        let out = dir.path().join(format!("out-{name}"));
        shard()
            .args(["--op", "mm", "--shards", "2", "--out"])
            .arg(&out)
            .arg(&path)
            .assert()
            .code(2)
            .stdout("")
            .stderr(
                predicate::str::starts_with("warmup-shard: ")
                    .and(predicate::str::contains(*message))
                    .and(predicate::str::contains(*name)),
            );
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
        .code(2)
        .stderr(
            predicate::str::contains("\"0\": give at least 1")
                .and(predicate::str::contains("18446744073709551615").not()),
        );
}

fn six_shapes(dir: &TempDir) -> PathBuf {
    let text = format!(
        "mm:\n  shapes:\n{}",
        (0..6).map(|i| format!("    - [{i}]\n")).collect::<String>()
    );
    source(dir, &text)
}

/// `warmup-shard --op mm --shards N --out OUT SRC`, run.
fn shard_into(out: &Path, src: &Path, shards: &str) -> assert_cmd::assert::Assert {
    shard()
        .args(["--op", "mm", "--shards", shards, "--out"])
        .arg(out)
        .arg(src)
        .assert()
}

/// A source of six shapes in `dir`, and a run of it into `dir/run` by shard count: the scratch
/// and the run.
fn six_shape_runs(dir: &TempDir) -> (PathBuf, impl Fn(&str) -> assert_cmd::assert::Assert) {
    let src = six_shapes(dir);
    let out = dir.path().join("run");
    let scratch = out.clone();
    (scratch, move |n: &str| shard_into(&out, &src, n))
}

#[test]
fn a_rerun_replaces_the_plan_and_removes_only_stale_shard_folders() {
    let dir = TempDir::new().expect("tempdir");
    let (out, run) = six_shape_runs(&dir);
    run("5").success();
    std::fs::create_dir_all(out.join("keep")).expect("mkdir");
    std::fs::create_dir_all(out.join("w9x")).expect("mkdir");
    std::fs::create_dir_all(out.join("w05")).expect("mkdir");
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
    for kept in ["w1/shapes.yaml", "keep", "w9x", "w05"] {
        assert!(out.join(kept).exists(), "{kept} was removed");
    }
    for stale in ["w1/rec", "w1/worker.log", "w1/status.json"] {
        assert!(!out.join(stale).exists(), "{stale} survived the rerun");
    }
    assert!(
        out.join("w1/.triton_cache").is_dir(),
        "the compile cache is kept"
    );
    let (plan, _) = protocol::shard_plan::ShardPlan::load(&out.join("plan.json")).expect("plan");
    assert_eq!(plan.shards.len(), 2);
    let names: Vec<String> = std::fs::read_dir(&out)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| !n.starts_with('.') || n == protocol::layout::LOCK),
        "a temporary was left: {names:?}"
    );
}

#[test]
fn a_rerun_that_fails_part_way_leaves_the_earlier_plan_shards_and_outputs_and_no_temporaries() {
    // The earlier run had 2 shards; the rerun asks for 3 and fails after shards 0 and 1 could be
    // replaced: shard 2's folder cannot be made (a file has its name), or shard 1's file is a
    // folder. Root ignores read-only modes, so the failure is made with names, as a bad disk
    // would make it with errors.
    for (blocker, is_dir) in [("w2", false), ("w1/shapes.yaml", true)] {
        let dir = TempDir::new().expect("tempdir");
        let (out, run) = six_shape_runs(&dir);
        run("2").success();
        std::fs::create_dir_all(out.join("w0/rec")).expect("mkdir");
        std::fs::write(out.join("w0/rec/mm.json"), "{\"k\": {}}").expect("record");
        std::fs::write(out.join("w1/worker.log"), "log").expect("log");
        let blocked = out.join(blocker);
        if is_dir {
            std::fs::remove_file(&blocked).expect("rm");
            std::fs::create_dir(&blocked).expect("mkdir");
            std::fs::write(blocked.join("x"), "x").expect("fill");
        } else {
            std::fs::write(&blocked, "not a folder").expect("file");
        }
        let before = snapshot(&out);
        run("3")
            .code(2)
            .stdout("")
            .stderr(predicate::str::contains(blocker));
        assert_eq!(
            snapshot(&out),
            before,
            "the failed rerun with {blocker} in the way changed the scratch"
        );
    }
}

#[test]
fn help_shows_examples_and_exit_statuses() {
    shard().arg("--help").assert().success().stdout(
        predicate::str::contains("EXAMPLES")
            .and(predicate::str::contains("EXIT STATUS"))
            .and(predicate::str::contains("--entry <KEY>")),
    );
}

#[test]
fn dry_run_prints_the_shard_files_a_run_writes_and_writes_nothing() {
    let dir = TempDir::new().expect("tempdir");
    let src = source(&dir, SHAPES);
    let out = dir.child("out");
    let dry = shard()
        .args(["--op", "mm", "--shards", "2000", "--dry-run", "--out"])
        .arg(out.path())
        .arg(&src)
        .assert()
        .code(0)
        .stderr("");
    assert_nothing_written(out.path());
    let run = shard()
        .args(["--op", "mm", "--shards", "2000", "--out"])
        .arg(out.path())
        .arg(&src)
        .assert()
        .code(0);
    let listed = String::from_utf8_lossy(&dry.get_output().stdout).into_owned();
    assert_eq!(listed, String::from_utf8_lossy(&run.get_output().stdout));
    assert_eq!(listed.lines().count(), 3, "k = min(N, shapes): {listed}");
}

/// A record folder whose sidecar is a FIFO (`fifo_meta`), or whose sidecar is sound and whose
/// cost file is a symlink to /dev/zero.
fn history_dir(dir: &TempDir, fifo_meta: bool) -> PathBuf {
    let rec = dir.path().join("rec");
    std::fs::create_dir(&rec).expect("mkdir");
    let meta = rec.join("mm.meta.json");
    let costs = rec.join("mm.costs.json");
    if fifo_meta {
        let made = std::process::Command::new("mkfifo")
            .arg(&meta)
            .status()
            .expect("mkfifo");
        assert!(made.success());
    } else {
        std::fs::write(
            &meta,
            r#"{"format": "warmup-harness-meta", "version": 1, "op": "mm", "tune_seconds": {},
                "triton": "3.6.0", "device": "NVIDIA H200"}"#,
        )
        .expect("sidecar");
        std::os::unix::fs::symlink("/dev/zero", &costs).expect("symlink");
    }
    rec
}

#[test]
fn a_history_file_that_is_a_fifo_or_dev_zero_is_refused_at_once_and_the_split_goes_on() {
    for (fifo_meta, what) in [(true, "is a FIFO"), (false, "is a character device")] {
        let dir = TempDir::new().expect("tempdir");
        let rec = history_dir(&dir, fifo_meta);
        let (mut cmd, out, _) = split_cmd(
            &dir,
            SHAPES,
            &["--op", "mm", "--shards", "2", "--triton", "3.6.0"],
        );
        cmd.arg("--device-model")
            .arg("NVIDIA H200")
            .arg("--history")
            .arg(&rec)
            // A read that waited on the FIFO or read /dev/zero to the end would pass this.
            .timeout(std::time::Duration::from_secs(60))
            .assert()
            .success()
            .stderr(
                predicate::str::contains("no usable history")
                    .and(predicate::str::contains(what))
                    .and(predicate::str::contains("not a regular file")),
            );
        assert!(out.join("plan.json").is_file());
    }
}

/// A list whose expansion is 10^7 nodes, through seven aliases of ten: `a` ten scalars, `b` ten
/// `a`s, ... `g`. `wrap` writes each level (a list, or a mapping merging the level below).
fn billion_laughs(wrap: fn(&str) -> String) -> String {
    let mut text = String::from(
        "a: &a {k0: 0, k1: 1, k2: 2, k3: 3, k4: 4, k5: 5, k6: 6, k7: 7, k8: 8, k9: 9}\n",
    );
    for (below, name) in "abcdef".chars().zip("bcdefg".chars()) {
        text.push_str(&format!(
            "{name}: &{name} {}\n",
            wrap(&vec![format!("*{below}"); 10].join(", "))
        ));
    }
    text
}

#[test]
fn an_alias_bomb_and_a_merge_bomb_are_refused_exit_2_writing_nothing() {
    // The contract's two limits (issue 29: they were missing from its list of what is refused).
    let dir = TempDir::new().expect("tempdir");
    let bomb = billion_laughs(|items| format!("[{items}]"))
        + "mm:\n  shape_desc: *g\n  shapes: [[1], [2]]\n";
    let (mut cmd, out, _) = split_cmd(&dir, &bomb, &["--op", "mm", "--shards", "2"]);
    cmd.assert().code(2).stderr(predicate::str::contains(
        "op \"mm\" expands to more than 20000000 nodes once aliases are written out: refusing",
    ));
    assert_nothing_written(&out);
    let merges = billion_laughs(|items| format!("{{<<: [{items}]}}"))
        + "mm:\n  <<: *g\n  shapes: [[1], [2]]\n";
    let (mut cmd, out, _) = split_cmd(&dir, &merges, &["--op", "mm", "--shards", "2"]);
    cmd.assert().code(2).stderr(predicate::str::contains(
        "merge keys (<<) expand this mapping to more than 1000000 entries: refusing",
    ));
    assert_nothing_written(&out);
}

#[test]
fn a_lock_left_held_by_an_ended_run_is_waited_for_then_taken() {
    // A run killed outright: the pid in SCRATCH/.lock has ended, what it left holds the lock.
    let dir = TempDir::new().expect("tempdir");
    let src = source(&dir, SHAPES);
    let out = dir.path().join("run");
    std::fs::create_dir(&out).expect("scratch");
    let mut leftover = testkit::Leftover::hold(&out.join(".lock"));
    let mut child = testkit::process(env!("CARGO_BIN_EXE_warmup-shard"))
        .args(["--op", "mm", "--shards", "2", "--out"])
        .arg(&out)
        .arg(&src)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("warmup-shard starts");
    let pid = child.id();
    let waiting = format!(
        "warmup-shard: {}: pid {}, which holds this scratch, has ended; waiting up to 15 s",
        out.display(),
        leftover.named
    );
    let (said, found) = testkit::stderr_until(&mut child, &waiting);
    assert!(found, "{said}");
    leftover.end();
    let done = child.wait_with_output().expect("warmup-shard ends");
    let rest = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(0), "{said}{rest}");
    assert!(out.join("w1/shapes.yaml").is_file(), "{said}{rest}");
    let holder = std::fs::read_to_string(out.join(".lock")).expect("lock file");
    assert_eq!(
        holder.trim(),
        pid.to_string(),
        "the holder now: {said}{rest}"
    );
}
