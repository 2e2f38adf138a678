//! warmup-cache as a process, on a cache built by hand under a test's own XDG_CACHE_HOME: the
//! listing, the folder, and each way of removing, a live session's record left alone.

use nix::fcntl::{Flock, FlockArg};
use predicates::prelude::*;
use protocol::cache_dir::slug;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
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
    let dir = root(home).join(slug(Some(triton), Some(device), Path::new("/")));
    record_in(&dir, triton, device, op.as_ref(), keys);
    dir
}

/// A record as [`record`]'s, in the folder `dir`, for an op named by any bytes.
fn record_in(dir: &Path, triton: &str, device: &str, op: &OsStr, keys: usize) {
    std::fs::create_dir_all(dir).expect("mkdir");
    let bucket: serde_json::Map<String, serde_json::Value> = (0..keys)
        .map(|i| {
            (
                format!("[{i}]"),
                serde_json::json!({"kwargs": {"BLOCK": 16}}),
            )
        })
        .collect();
    std::fs::write(
        protocol::layout::record_file(dir, op),
        serde_json::json!({ "m:kernel": bucket }).to_string(),
    )
    .expect("record");
    std::fs::write(
        protocol::history::meta_path(dir, op),
        serde_json::json!({"format": "warmup-harness-meta", "version": 1,
                           "op": op.to_string_lossy(), "triton": triton, "device": device})
        .to_string(),
    )
    .expect("sidecar");
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

#[test]
fn remove_unused_refuses_a_device_it_cannot_name_unless_the_user_names_it() {
    let home = tempfile::tempdir().expect("tempdir");
    let h200 = record(home.path(), "3.6.0", "NVIDIA H200", "mm", 3);
    record(home.path(), "3.6.0", "NVIDIA A100", "mm", 2);
    // A login node or a container: no driver files, no sysfs GPU, so no device name.
    let nothing = home.path().join("no-gpu");
    std::fs::create_dir(&nothing).expect("mkdir");
    let refused = cache(home.path())
        .env("WARMUP_PROBE_ROOT", &nothing)
        .args(["remove", "--unused", "--triton", "3.6.0"])
        .assert()
        .code(2)
        .stdout("");
    let err = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    assert!(
        err.contains("cannot tell this machine's device model")
            && err.contains("--device-model NAME"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(listed(home.path()).len(), 2, "nothing removed");
    cache(home.path())
        .env("WARMUP_PROBE_ROOT", &nothing)
        .args(["remove", "--unused", "--triton", "3.6.0", "--dry-run"])
        .assert()
        .code(2);
    // Named by the user, the device is the user's word.
    cache(home.path())
        .env("WARMUP_PROBE_ROOT", &nothing)
        .args(["remove", "--unused", "--triton", "3.6.0"])
        .args(["--device-model", "NVIDIA H200"])
        .assert()
        .success();
    let left = listed(home.path());
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0]["folder"], h200.to_string_lossy().as_ref());
}

#[test]
fn a_platform_folder_that_links_to_a_team_folder_is_listed_and_removed_inside_it() {
    let home = tempfile::tempdir().expect("tempdir");
    let team = home.path().join("team/h200");
    record_in(&team, "3.6.0", "NVIDIA H200", "mm".as_ref(), 3);
    // A link planted for one file: removing the op removes the link, never its target.
    let victim = home.path().join("victim");
    std::fs::write(&victim, "keep me").expect("victim");
    std::os::unix::fs::symlink(&victim, team.join(".mm.used")).expect("file link");
    std::fs::create_dir_all(root(home.path())).expect("mkdir");
    let link = root(home.path()).join(slug(Some("3.6.0"), Some("NVIDIA H200"), Path::new("/")));
    std::os::unix::fs::symlink(&team, &link).expect("folder link");
    // A link to a file is no folder, as runs find it.
    std::os::unix::fs::symlink(&victim, root(home.path()).join("not-a-folder")).expect("link");
    let items = listed(home.path());
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(
        (items[0]["op"].as_str(), items[0]["keys"].as_u64()),
        (Some("mm"), Some(3))
    );
    assert_eq!(items[0]["folder"], link.to_string_lossy().as_ref());
    // --unused keeps this machine's records under any name that leads to its folder.
    std::os::unix::fs::symlink(&team, root(home.path()).join("team-h200")).expect("link");
    assert_eq!(listed(home.path()).len(), 2);
    cache(home.path())
        .args(["remove", "--unused", "--triton", "3.6.0"])
        .args(["--device-model", "NVIDIA H200"])
        .assert()
        .success();
    assert!(team.join("mm.json").is_file(), "this machine's record kept");
    cache(home.path())
        .args(["remove", "--op", "mm"])
        .assert()
        .success()
        .stdout(format!("removed mm {}\n", link.display()));
    assert!(!team.join("mm.json").exists() && !team.join("mm.meta.json").exists());
    assert!(
        link.is_symlink() && team.is_dir(),
        "the links and the team folder stay"
    );
    assert!(
        team.join(".mm.used").symlink_metadata().is_err(),
        "the file link went"
    );
    assert_eq!(std::fs::read_to_string(&victim).expect("victim"), "keep me");
}

#[test]
fn remove_refuses_an_op_that_cannot_name_a_file_and_a_blank_triton_or_device() {
    let home = tempfile::tempdir().expect("tempdir");
    record(home.path(), "3.6.0", "NVIDIA H200", "mm", 3);
    for op in ["", "  ", "../x", "a/b", "..", "mm.meta"] {
        let out = cache(home.path())
            .args(["remove", "--op", op])
            .assert()
            .code(2)
            .stdout("");
        let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        assert!(err.contains("--op"), "{op:?}: {err}");
    }
    for (triton, device, said) in [
        (
            "",
            "NVIDIA H200",
            "--triton is blank: give this machine's Triton version",
        ),
        ("3.6.0", " ", "--device-model is blank"),
    ] {
        cache(home.path())
            .args([
                "remove",
                "--unused",
                "--triton",
                triton,
                "--device-model",
                device,
            ])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(said));
    }
    assert_eq!(listed(home.path()).len(), 1, "nothing removed");
}

#[test]
fn a_dry_run_keeps_a_live_sessions_record_and_exits_as_the_removal_would() {
    let home = tempfile::tempdir().expect("tempdir");
    let dir = record(home.path(), "3.6.0", "NVIDIA H200", "mm", 3);
    record(home.path(), "3.6.0", "NVIDIA H200", "addmm", 1);
    let sessions = toolkit::lock::open(&dir.join(".mm.sessions")).expect("open");
    let held = Flock::lock(sessions, FlockArg::LockShared).expect("a live session");
    let dry = cache(home.path())
        .args(["remove", "--older-than", "0", "--dry-run"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "is in use by a running record session; would be left as it is",
        ));
    let out = String::from_utf8_lossy(&dry.get_output().stdout).into_owned();
    assert_eq!(out, format!("would remove addmm {}\n", dir.display()));
    assert_eq!(listed(home.path()).len(), 2, "a dry run removes nothing");
    drop(held);
    cache(home.path())
        .args(["remove", "--older-than", "0", "--dry-run"])
        .assert()
        .success()
        .stdout(predicate::str::contains("would remove mm"));
}

#[test]
fn an_op_of_any_bytes_is_listed_on_one_line_and_removed_by_its_name() {
    let home = tempfile::tempdir().expect("tempdir");
    let dir = root(home.path()).join(slug(Some("3.6.0"), Some("NVIDIA H200"), Path::new("/")));
    let odd = OsStr::from_bytes(b"mm\xff");
    record_in(&dir, "3.6.0", "NVIDIA H200", odd, 2);
    record_in(&dir, "3.6.0", "NVIDIA\nH200", "two\nlines".as_ref(), 1);
    let table = cache(home.path()).arg("list").assert().success();
    let text = String::from_utf8(table.get_output().stdout.clone()).expect("utf-8");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[1].starts_with("mm\\xff "), "{text}");
    assert!(
        lines[2].starts_with("two\\nlines ") && lines[2].contains("NVIDIA\\nH200"),
        "{text}"
    );
    let items = listed(home.path());
    let ops: Vec<&str> = items.iter().filter_map(|i| i["op"].as_str()).collect();
    assert_eq!(
        ops,
        ["mm\u{fffd}", "two\nlines"],
        "JSON carries text: U+FFFD per bad byte"
    );
    cache(home.path())
        .args(["remove", "--op"])
        .arg(odd)
        .assert()
        .success()
        .stdout(format!("removed mm\\xff {}\n", dir.display()));
    assert!(!protocol::layout::record_file(&dir, odd).exists());
    assert!(!protocol::history::meta_path(&dir, odd).exists());
    assert_eq!(listed(home.path()).len(), 1);
    // Under the lock the harness takes for that op: its name's bytes, not a lossy copy.
    assert!(dir.join(OsStr::from_bytes(b".mm\xff.lock")).is_file());
    assert!(!dir.join(".mm\u{fffd}.lock").exists());
}
