//! warmup-spawn running some shards of a plan, driven as a process: `--only LIST` and
//! `--index-from-env VAR` run only those shards and touch only their outputs, a task that holds
//! one device keeps it as it is, bad lists and indices exit 2 writing nothing, and two runs of
//! one shard exclude each other while runs of different shards share the scratch and keep a
//! whole-scratch run out.

use std::path::Path;
use std::time::{Duration, Instant};

mod common;
use common::{plan, spawn_cmd, spawn_sh, status};

/// A child that records its environment in its record folder, then says hello in its log.
const RECORDER: &str = r#"env > "$FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR/env"; echo new run"#;

/// What an earlier run left in shard i: a record, a log and a status.
fn seed_outputs(dir: &Path, i: usize) {
    let w = dir.join(format!("w{i}"));
    std::fs::create_dir_all(w.join("rec")).expect("rec");
    std::fs::write(w.join("rec/mm.json"), "{\"old\": {}}").expect("record");
    std::fs::write(w.join("worker.log"), "old log\n").expect("log");
    std::fs::write(w.join("status.json"), "{\"old\": true}\n").expect("status");
}

fn outputs(dir: &Path, i: usize) -> Vec<Option<String>> {
    ["rec/mm.json", "worker.log", "status.json"]
        .iter()
        .map(|f| std::fs::read_to_string(dir.join(format!("w{i}/{f}"))).ok())
        .collect()
}

#[test]
fn only_runs_the_listed_shards_and_leaves_the_others_outputs_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(dir.path(), 5);
    for i in 0..5 {
        seed_outputs(dir.path(), i);
    }
    let before: Vec<_> = (0..5).map(|i| outputs(dir.path(), i)).collect();
    spawn_sh(&plan, &["--only", "1,3-4", "--devices", "0,1"], RECORDER)
        .assert()
        .success();
    for (i, earlier) in before.iter().enumerate() {
        if [1, 3, 4].contains(&i) {
            assert_eq!(status(dir.path(), i)["exit_code"], 0, "shard {i} ran");
            let log = std::fs::read_to_string(dir.path().join(format!("w{i}/worker.log")));
            assert_eq!(log.expect("log"), "new run\n");
            assert!(
                !dir.path().join(format!("w{i}/rec/mm.json")).exists(),
                "old record cleared"
            );
        } else {
            assert_eq!(&outputs(dir.path(), i), earlier, "shard {i} untouched");
            assert!(!dir.path().join(format!("w{i}/rec/env")).exists());
        }
    }
}

#[test]
fn a_task_holding_one_device_keeps_its_visibility_as_it_is() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(dir.path(), 4);
    // As Slurm gives a rocm task its GPU: both variables set, to the task's own device.
    spawn_cmd()
        .args(["--plan", plan.to_str().expect("utf-8")])
        .args([
            "--index-from-env",
            "SLURM_ARRAY_TASK_ID",
            "--backend",
            "rocm",
        ])
        .args(["--", "sh", "-c", RECORDER])
        .env("SLURM_ARRAY_TASK_ID", "2")
        .env("ROCR_VISIBLE_DEVICES", "GPU-5")
        .env("HIP_VISIBLE_DEVICES", "0")
        .assert()
        .success();
    let env = std::fs::read_to_string(dir.path().join("w2/rec/env")).expect("child env");
    assert!(env.lines().any(|l| l == "HIP_VISIBLE_DEVICES=0"), "{env}");
    assert!(
        env.lines().any(|l| l == "ROCR_VISIBLE_DEVICES=GPU-5"),
        "{env}"
    );
    let st = status(dir.path(), 2);
    assert_eq!(st["device"], "0");
    assert!(
        st["env"]["set"].get("HIP_VISIBLE_DEVICES").is_none(),
        "{st}"
    );
    assert!(!st["env"]["unset"].to_string().contains("ROCR"), "{st}");
    for i in [0, 1, 3] {
        assert!(!dir.path().join(format!("w{i}/status.json")).exists());
    }
}

#[test]
fn a_task_seeing_several_devices_is_pinned_to_the_first_with_a_warning() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(dir.path(), 2);
    let out = spawn_cmd()
        .args(["--plan", plan.to_str().expect("utf-8")])
        .args([
            "--index-from-env",
            "SLURM_PROCID",
            "--",
            "sh",
            "-c",
            RECORDER,
        ])
        .env("SLURM_PROCID", "1")
        .env("CUDA_VISIBLE_DEVICES", "4,5")
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        stderr
            .contains("SLURM_PROCID=1: this task sees 2 devices; its shard runs on the first (4)"),
        "{stderr}"
    );
    // A task's run is one shard, said in the singular (issue 29: "1 shards").
    assert!(stderr.contains("1 shard: 1 ok, 0 failed"), "{stderr}");
    let env = std::fs::read_to_string(dir.path().join("w1/rec/env")).expect("child env");
    assert!(env.lines().any(|l| l == "CUDA_VISIBLE_DEVICES=4"), "{env}");
}

/// Runs warmup-spawn with `args` and `env`; checks exit 2, a message holding `needle`, and that
/// no shard's outputs were touched.
fn refused(args: &[&str], env: &[(&str, &str)], needle: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(dir.path(), 4);
    for i in 0..4 {
        seed_outputs(dir.path(), i);
    }
    let mut cmd = spawn_sh(&plan, &[&["--devices", "0"], args].concat(), RECORDER);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.assert().code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains(needle), "{args:?}: {stderr}");
    for i in 0..4 {
        assert_eq!(
            outputs(dir.path(), i)[1].as_deref(),
            Some("old log\n"),
            "{args:?}"
        );
    }
    assert!(
        !dir.path().join(".lock").exists(),
        "{args:?}: refused before locking"
    );
}

#[test]
fn bad_lists_and_indices_exit_2_writing_nothing() {
    refused(&["--only", "1,x"], &[], "item 2 \"x\" is not a shard index");
    refused(&["--only", "3-1"], &[], "runs backwards");
    refused(
        &["--only", "2-5"],
        &[],
        "shard 4 is not in the plan, which has 4 shards (indices 0-3); --only 2-5 asks for it",
    );
    // Checked against the plan before it is expanded: no capacity-overflow panic (exit 101),
    // no 16 GB list.
    for huge in ["0-18446744073709551615", "1,0-2000000000"] {
        refused(
            &["--only", huge],
            &[],
            &format!("shard 4 is not in the plan, which has 4 shards (indices 0-3); --only {huge} asks for it"),
        );
    }
    refused(
        &["--index-from-env", "SLURM_ARRAY_TASK_ID"],
        &[],
        "SLURM_ARRAY_TASK_ID is not set",
    );
    refused(
        &["--index-from-env", "SLURM_ARRAY_TASK_ID"],
        &[("SLURM_ARRAY_TASK_ID", "-1")],
        "SLURM_ARRAY_TASK_ID=\"-1\" is not a shard index",
    );
    refused(
        &["--index-from-env", "JOB_COMPLETION_INDEX"],
        &[("JOB_COMPLETION_INDEX", "7")],
        "shard 7 is not in the plan, which has 4 shards (indices 0-3); JOB_COMPLETION_INDEX=7 asks",
    );
    refused(
        &["--only", "1", "--index-from-env", "I"],
        &[("I", "1")],
        "cannot be used with",
    );
}

/// Waits for `path` to exist while `run` runs, generously: the machine may be loaded.
fn wait_for(path: &Path, run: &mut std::process::Child) {
    let end = Instant::now() + Duration::from_secs(600);
    while !path.exists() {
        assert!(Instant::now() < end, "{} never appeared", path.display());
        if let Some(status) = run.try_wait().expect("try_wait") {
            panic!(
                "the run ended ({status}) before {} appeared",
                path.display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn one_shard_runs_once_at_a_time_while_other_shards_share_the_scratch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(dir.path(), 3);
    let plan = plan.to_str().expect("utf-8");
    let go = dir.path().join("go");
    let child = format!(
        r#"touch "$FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR/started"; while [ ! -e '{}' ]; do sleep 0.02; done"#,
        go.display()
    );
    let mut first = std::process::Command::new(assert_cmd::cargo::cargo_bin("warmup-spawn"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").expect("PATH"))
        .args([
            "--plan",
            plan,
            "--only",
            "0",
            "--devices",
            "0",
            "--backend",
            "cuda",
        ])
        .args(["--", "sh", "-c", &child])
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("first run");
    wait_for(&dir.path().join("w0/rec/started"), &mut first);

    let again = spawn_sh(plan, &["--only", "0-1", "--devices", "0"], RECORDER)
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&again.get_output().stderr).into_owned();
    assert!(
        stderr.contains(&format!("shard 0 of {}", dir.path().display()))
            && stderr.contains(&format!("is being run by pid {} on ", first.id())),
        "{stderr}"
    );
    assert!(
        !dir.path().join("w1/status.json").exists(),
        "refused before running shard 1"
    );

    let whole = spawn_sh(plan, &["--devices", "0"], RECORDER)
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&whole.get_output().stderr).into_owned();
    assert!(
        stderr.contains("this scratch folder is in use by another run"),
        "{stderr}"
    );

    spawn_sh(plan, &["--only", "1,2", "--devices", "0"], RECORDER)
        .assert()
        .success();
    assert!(
        !dir.path().join("w0/status.json").exists(),
        "shard 0 still running"
    );

    std::fs::write(&go, "").expect("go");
    assert!(first.wait().expect("wait").success());
    assert_eq!(status(dir.path(), 0)["exit_code"], 0);
}

#[test]
fn the_summary_of_a_run_of_some_shards_covers_those_shards_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(dir.path(), 5);
    // The child's argv ends with `--shape_file <its shard file>`: sh -c gives it as $1.
    let child = r#"case $1 in */w3/*) exit 4 ;; esac"#;
    let out = spawn_cmd()
        .args(["--plan", plan.to_str().expect("utf-8"), "--only", "1,3"])
        .args(["--devices", "0", "--backend", "cuda", "--summary", "-"])
        .args(["--", "sh", "-c", child])
        .assert()
        .code(1);
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let lines: Vec<&str> = stdout.lines().collect();
    let d = dir.path().display();
    for want in [
        "version 1",
        "op mm",
        "shards 2",
        "ok 1",
        "failed 1",
        "not_started 0",
    ] {
        assert!(lines.contains(&want), "{want:?} missing: {stdout}");
    }
    let shards: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("shard "))
        .collect();
    assert_eq!(
        shards,
        [
            format!("shard 1 ok {d}/w1/worker.log"),
            format!("shard 3 failed {d}/w3/worker.log"),
        ],
        "{stdout}"
    );
}

#[test]
fn a_run_of_some_shards_runs_under_a_callers_whole_scratch_lock() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(dir.path(), 2);
    // As scripts/warmup holds the scratch: flock on SCRATCH/.lock, its descriptor lent.
    let caller = r#"exec 9>>"$0/.lock" && flock -xn 9 && WARMUP_SCRATCH_LOCK_FD=9 exec "$@""#;
    let ran = std::process::Command::new("sh")
        .args(["-c", caller])
        .arg(dir.path())
        .arg(assert_cmd::cargo::cargo_bin("warmup-spawn"))
        .args(["--plan", plan.to_str().expect("utf-8"), "--only", "1"])
        .args([
            "--devices",
            "0",
            "--backend",
            "cuda",
            "--",
            "sh",
            "-c",
            RECORDER,
        ])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").expect("PATH"))
        .status()
        .expect("sh");
    assert!(ran.success(), "refused under the caller's lock: {ran}");
    assert_eq!(status(dir.path(), 1)["exit_code"], 0);
    assert!(!dir.path().join("w0/status.json").exists());
}
