//! warmup-cache as a process, on a cache built by hand under a test's own XDG_CACHE_HOME: the
//! listing, the folder, and each way of removing, a live session's record left alone.

use nix::fcntl::{Flock, FlockArg};
use predicates::prelude::*;
use protocol::cache_dir::slug;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

fn cache(home: &Path) -> assert_cmd::Command {
    let mut cmd = testkit::tool(env!("CARGO_BIN_EXE_warmup-cache"));
    cmd.env("XDG_CACHE_HOME", home).env_remove("HOME");
    cmd
}

fn root(home: &Path) -> PathBuf {
    home.join("parallel-warmup/records")
}

/// A record of `keys` keys of one kernel for op `op`, made with `triton` on `device`.
fn record(home: &Path, triton: &str, device: &str, op: &str, keys: usize) -> PathBuf {
    let dir = root(home).join(slug(Some(triton), Some(device)));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let bucket: serde_json::Map<String, serde_json::Value> = (0..keys)
        .map(|i| {
            (
                format!("[{i}]"),
                serde_json::json!({"kwargs": {"BLOCK": 16}}),
            )
        })
        .collect();
    std::fs::write(
        dir.join(format!("{op}.json")),
        serde_json::json!({ "m:kernel": bucket }).to_string(),
    )
    .expect("record");
    std::fs::write(
        dir.join(format!("{op}.meta.json")),
        serde_json::json!({"format": "warmup-harness-meta", "version": 1, "op": op,
                           "triton": triton, "device": device})
        .to_string(),
    )
    .expect("sidecar");
    dir
}

fn listed(home: &Path) -> Vec<serde_json::Value> {
    let out = cache(home).args(["list", "--json"]).output().expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    value.as_array().expect("array").clone()
}

#[test]
fn list_shows_each_ops_record_with_its_platform_size_and_last_use() {
    let home = tempfile::tempdir().expect("tempdir");
    let h200 = record(home.path(), "3.6.0", "NVIDIA H200", "mm", 3);
    record(home.path(), "3.5.1", "NVIDIA A100", "mm", 2);
    record(home.path(), "3.6.0", "NVIDIA H200", "addmm", 1);
    let table = cache(home.path()).arg("list").assert().success();
    let text = String::from_utf8(table.get_output().stdout.clone()).expect("utf-8");
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("OP") && lines[0].contains("LAST USE"),
        "{text}"
    );
    assert_eq!(lines.len(), 4, "{text}");
    let row = lines
        .iter()
        .find(|l| l.starts_with("mm ") && l.contains("A100"))
        .expect("the A100 row");
    assert!(row.contains("3.5.1") && row.contains(" 2 "), "{row}");
    let items = listed(home.path());
    let mm = items
        .iter()
        .find(|i| i["op"] == "mm" && i["device"] == "NVIDIA H200")
        .expect("mm on the H200");
    assert_eq!(
        (mm["kernels"].as_u64(), mm["keys"].as_u64()),
        (Some(1), Some(3))
    );
    assert_eq!(mm["triton"], "3.6.0");
    assert_eq!(mm["folder"], h200.to_string_lossy().as_ref());
    assert!(mm["bytes"].as_u64() > Some(0) && mm["last_use"].as_u64().is_some());
}

#[test]
fn path_prints_the_cache_folder_from_xdg_else_home_and_none_is_exit_2() {
    let home = tempfile::tempdir().expect("tempdir");
    cache(home.path())
        .arg("path")
        .assert()
        .success()
        .stdout(format!("{}\n", root(home.path()).display()));
    testkit::tool(env!("CARGO_BIN_EXE_warmup-cache"))
        .env_remove("XDG_CACHE_HOME")
        .env("HOME", home.path())
        .arg("path")
        .assert()
        .success()
        .stdout(format!(
            "{}/.cache/parallel-warmup/records\n",
            home.path().display()
        ));
    testkit::tool(env!("CARGO_BIN_EXE_warmup-cache"))
        .env_remove("XDG_CACHE_HOME")
        .env_remove("HOME")
        .arg("list")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no record cache"));
}

#[test]
fn remove_never_opens_a_lock_through_a_link_planted_in_a_record_folder() {
    for planted in [".mm.lock", ".mm.sessions"] {
        let home = tempfile::tempdir().expect("tempdir");
        let h200 = record(home.path(), "3.6.0", "NVIDIA H200", "mm", 3);
        let made = home.path().join("made");
        std::os::unix::fs::symlink(&made, h200.join(planted)).expect("symlink");
        cache(home.path())
            .args(["remove", "--op", "mm"])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(format!(
                "{} is a symbolic link, which the tools never write through: remove it",
                h200.join(planted).display()
            )));
        assert!(!made.exists(), "a file was made where the link points");
        assert!(h200.join("mm.json").is_file(), "removed all the same");
    }
}

#[test]
fn remove_by_op_removes_it_everywhere_and_keeps_the_other_ops_and_the_lock_files() {
    let home = tempfile::tempdir().expect("tempdir");
    let h200 = record(home.path(), "3.6.0", "NVIDIA H200", "mm", 3);
    let a100 = record(home.path(), "3.5.1", "NVIDIA A100", "mm", 2);
    record(home.path(), "3.6.0", "NVIDIA H200", "addmm", 1);
    std::fs::write(h200.join(".mm.lock"), "").expect("a writer's lock file");
    cache(home.path())
        .args(["remove", "--op", "mm", "--dry-run"])
        .assert()
        .success()
        .stdout(predicate::str::contains("would remove mm"));
    assert_eq!(listed(home.path()).len(), 3, "a dry run removes nothing");
    cache(home.path())
        .args(["remove", "--op", "mm"])
        .assert()
        .success()
        .stdout(predicate::str::contains(format!(
            "removed mm {}",
            a100.display()
        )));
    let left = listed(home.path());
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0]["op"], "addmm");
    assert!(!h200.join("mm.json").exists() && !h200.join("mm.meta.json").exists());
    assert!(
        h200.join(".mm.lock").exists(),
        "a lock file is never removed"
    );
}

#[test]
fn remove_older_than_goes_by_the_last_use() {
    let home = tempfile::tempdir().expect("tempdir");
    let old = record(home.path(), "3.6.0", "NVIDIA H200", "mm", 3);
    record(home.path(), "3.6.0", "NVIDIA H200", "addmm", 1);
    let long_ago = SystemTime::now() - Duration::from_secs(40 * 86_400);
    for name in ["mm.json", "mm.meta.json"] {
        std::fs::File::options()
            .write(true)
            .open(old.join(name))
            .and_then(|f| f.set_modified(long_ago))
            .expect("age it");
    }
    cache(home.path())
        .args(["remove", "--older-than", "30"])
        .assert()
        .success();
    let left = listed(home.path());
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0]["op"], "addmm");
}

#[test]
fn remove_unused_keeps_only_this_machines_triton_and_device() {
    let home = tempfile::tempdir().expect("tempdir");
    let mine = record(home.path(), "3.6.0", "NVIDIA H200", "mm", 3);
    record(home.path(), "3.5.1", "NVIDIA H200", "mm", 2);
    record(home.path(), "3.6.0", "NVIDIA A100", "mm", 2);
    cache(home.path())
        .args(["remove", "--unused", "--triton", "3.6.0"])
        .args(["--device-model", "NVIDIA H200"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "this machine: Triton 3.6.0, device NVIDIA H200",
        ));
    let left = listed(home.path());
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0]["folder"], mine.to_string_lossy().as_ref());
    // A Python without Triton cannot say which Triton is in use: nothing is removed.
    let python = home.path().join("bin/python3");
    std::fs::create_dir_all(python.parent().expect("bin")).expect("mkdir");
    std::fs::write(&python, "").expect("a Python without packages");
    cache(home.path())
        .args(["remove", "--unused", "--python"])
        .arg(&python)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "cannot tell this machine's Triton",
        ));
    assert_eq!(listed(home.path()).len(), 1);
}

#[test]
fn remove_leaves_a_record_a_live_session_holds_and_says_so() {
    let home = tempfile::tempdir().expect("tempdir");
    let dir = record(home.path(), "3.6.0", "NVIDIA H200", "mm", 3);
    record(home.path(), "3.6.0", "NVIDIA H200", "addmm", 1);
    // A record session holds the op's live-session lock shared for its whole life.
    let sessions = toolkit::lock::open(&dir.join(".mm.sessions")).expect("open");
    let held = Flock::lock(sessions, FlockArg::LockShared).expect("a live session");
    cache(home.path())
        .args(["remove", "--older-than", "0"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "is in use by a running record session",
        ));
    assert!(
        dir.join("mm.json").is_file(),
        "the live session's record is kept"
    );
    assert!(!dir.join("addmm.json").exists(), "the others are removed");
    drop(held);
    cache(home.path())
        .args(["remove", "--op", "mm"])
        .assert()
        .success();
    assert!(!dir.join("mm.json").exists());
}

#[test]
fn remove_needs_one_way_to_choose() {
    let home = tempfile::tempdir().expect("tempdir");
    cache(home.path()).arg("remove").assert().code(2);
    cache(home.path())
        .args(["remove", "--op", "mm", "--unused"])
        .assert()
        .code(2);
}
