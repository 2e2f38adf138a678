//! warmup-spawn driven as a process: argv and environment of the children, dry runs, device
//! selection and the pool, bad input, backend choice and probes on a fake tree, timeouts.

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// warmup-spawn with an environment holding only PATH, so no developer shell changes a result.
fn spawn_cmd() -> Command {
    let mut cmd = Command::cargo_bin("warmup-spawn").expect("binary built");
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").expect("PATH is set"));
    cmd
}

/// A scratch folder with `n` shards (w<i>/shapes.yaml) and a v1 plan.
fn plan(dir: &Path, n: usize) -> PathBuf {
    let shards: Vec<Value> = (0..n)
        .map(|i| {
            let w = dir.join(format!("w{i}"));
            std::fs::create_dir_all(&w).expect("mkdir");
            std::fs::write(w.join("shapes.yaml"), format!("mm:\n  shapes:\n  - [{i}, 2]\n"))
                .expect("shard file");
            serde_json::json!({"index": i, "shape_file": format!("w{i}/shapes.yaml"), "shapes": [i]})
        })
        .collect();
    let plan = serde_json::json!({
        "version": 1, "op": "mm", "source": "/data/mm.yaml", "strategy": "round-robin",
        "shapes": n, "shards": shards,
    });
    let path = dir.join("plan.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&plan).expect("json")).expect("plan");
    path
}

fn status(dir: &Path, i: usize) -> Value {
    let text = std::fs::read_to_string(dir.join(format!("w{i}/status.json"))).expect("status.json");
    serde_json::from_str(&text).expect("status is JSON")
}

/// A child that records its argv (one per line) and environment in its record folder.
const RECORDER: &str = r#"printf '%s\n' "$0" "$@" > "$FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR/argv"; env > "$FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR/env""#;

#[test]
fn children_get_the_shard_file_and_the_contract_environment() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(dir.path(), 2);
    spawn_cmd()
        .args([
            "--plan",
            plan.to_str().expect("utf-8"),
            "--devices",
            "7,GPU-5",
            "--backend",
            "rocm",
        ])
        .env("ROCR_VISIBLE_DEVICES", "3")
        .env("FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR", "/replay")
        .env("PARALLEL_WARMUP_GPUS", "2")
        .env("FLAGGEMS_PERF_TTGIR_DUMP_DIR", "/ir")
        .env("KEEP_ME", "yes")
        .args([
            "--",
            "sh",
            "-c",
            RECORDER,
            "--shape_file",
            "old.yaml",
            "-k",
            "a b",
            "--shape_file=x.yaml",
        ])
        .assert()
        .success();
    let root = std::fs::canonicalize(dir.path()).expect("canonical");
    for (i, device) in [(0, "7"), (1, "GPU-5")] {
        let rec = root.join(format!("w{i}/rec"));
        let argv = std::fs::read_to_string(rec.join("argv")).expect("argv");
        let shard_file = root.join(format!("w{i}/shapes.yaml"));
        assert_eq!(
            argv,
            // sh -c takes the first argument after the script as $0.
            format!("-k\na b\n--shape_file\n{}\n", shard_file.display()),
            "shard {i}"
        );
        let env = std::fs::read_to_string(rec.join("env")).expect("env");
        let has = |line: &str| env.lines().any(|l| l == line);
        assert!(has(&format!("HIP_VISIBLE_DEVICES={device}")), "{env}");
        assert!(has("FLAGGEMS_PERF_WARMUP_WORKER=1"));
        assert!(has(&format!(
            "FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR={}",
            rec.display()
        )));
        assert!(has(&format!(
            "TRITON_CACHE_DIR={}",
            root.join(format!("w{i}/.triton_cache")).display()
        )));
        assert!(has("FLAGGEMS_PERF_COLOR=never"));
        assert!(has("PYTHONUNBUFFERED=1"));
        assert!(has("KEEP_ME=yes"));
        for gone in [
            "ROCR_VISIBLE_DEVICES=",
            "FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR=",
            "PARALLEL_WARMUP_GPUS=",
            "FLAGGEMS_PERF_TTGIR_DUMP_DIR=",
        ] {
            assert!(!env.lines().any(|l| l.starts_with(gone)), "{gone} in {env}");
        }
        let st = status(dir.path(), i);
        assert_eq!(st["device"], device);
        assert_eq!(st["exit_code"], 0);
        assert_eq!(st["timed_out"], false);
        assert!(st["started_at"].as_str().expect("time").ends_with('Z'));
        assert_eq!(st["env"]["set"]["HIP_VISIBLE_DEVICES"], device);
        assert!(st["env"]["unset"]
            .as_array()
            .expect("unset")
            .contains(&"ROCR_VISIBLE_DEVICES".into()));
    }
}

#[test]
fn dry_run_prints_env_lines_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(dir.path(), 3);
    let out = spawn_cmd()
        .args([
            "--plan",
            plan.to_str().expect("utf-8"),
            "--dry-run",
            "--devices",
            "MIG-1/2, 4",
            "--backend",
            "cuda",
        ])
        .args(["--", "true", "-k", "it's", "--shape_file", "a.yaml"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).expect("utf-8");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 6, "{text}");
    assert_eq!(lines[0], "# shard 0 on device MIG-1/2");
    assert_eq!(lines[2], "# shard 1 on device 4");
    assert_eq!(lines[4], "# shard 2 on device MIG-1/2");
    assert!(lines[1].starts_with("env -u FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR -u PARALLEL_WARMUP_GPUS -u FLAGGEMS_PERF_TTGIR_DUMP_DIR CUDA_VISIBLE_DEVICES=MIG-1/2 FLAGGEMS_PERF_WARMUP_WORKER=1 "), "{}", lines[1]);
    let shard0 = std::path::absolute(dir.path().join("w0/shapes.yaml")).expect("absolute");
    assert!(
        lines[1].ends_with(&format!(
            r"true -k 'it'\''s' --shape_file {}",
            shard0.display()
        )),
        "{}",
        lines[1]
    );
    assert!(!dir.path().join("w0/rec").exists(), "dry run created rec");
    assert!(
        !dir.path().join("w0/worker.log").exists(),
        "dry run created a log"
    );
}

#[test]
fn caller_visibility_list_with_uuids_and_mig_ids_is_sliced_not_renumbered() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(dir.path(), 3);
    spawn_cmd()
        .env("CUDA_VISIBLE_DEVICES", "GPU-8f2a1b,MIG-77c1/1/0, 5")
        .args([
            "--plan",
            plan.to_str().expect("utf-8"),
            "--",
            "sh",
            "-c",
            RECORDER,
        ])
        .assert()
        .success();
    for (i, device) in [(0, "GPU-8f2a1b"), (1, "MIG-77c1/1/0"), (2, "5")] {
        assert_eq!(status(dir.path(), i)["device"], device);
        let env = std::fs::read_to_string(dir.path().join(format!("w{i}/rec/env"))).expect("env");
        assert!(
            env.lines()
                .any(|l| l == format!("CUDA_VISIBLE_DEVICES={device}")),
            "{env}"
        );
    }
}

/// Each child appends `<device> start <ns>` and `<device> end <ns>` around a short sleep.
const STAMPER: &str = r#"log="$0"; echo "$CUDA_VISIBLE_DEVICES start $(date +%s%N)" >> "$log"; sleep 0.05; echo "$CUDA_VISIBLE_DEVICES end $(date +%s%N)" >> "$log""#;

/// The most children that ran at once on each device, from the start/end stamps.
fn peak_per_device(log: &Path) -> std::collections::BTreeMap<String, i32> {
    let text = std::fs::read_to_string(log).expect("stamps");
    let mut events: Vec<(u128, i32, String)> = text
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let delta = if f[1] == "start" { 1 } else { -1 };
            (f[2].parse().expect("ns"), delta, f[0].to_owned())
        })
        .collect();
    // Ends sort before starts at the same instant: a device handed over is not shared.
    events.sort_by_key(|(t, d, _)| (*t, *d));
    let mut now = std::collections::BTreeMap::new();
    let mut peak = std::collections::BTreeMap::new();
    for (_, delta, device) in events {
        let n: &mut i32 = now.entry(device.clone()).or_default();
        *n += delta;
        let p: &mut i32 = peak.entry(device).or_default();
        *p = (*p).max(*n);
    }
    peak
}

#[test]
fn more_shards_than_devices_never_run_two_children_on_one_device() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(dir.path(), 9);
    let stamps = dir.path().join("stamps");
    spawn_cmd()
        .args([
            "--plan",
            plan.to_str().expect("utf-8"),
            "--devices",
            "a,b,c",
            "--backend",
            "cuda",
        ])
        .args(["--", "sh", "-c", STAMPER, stamps.to_str().expect("utf-8")])
        .assert()
        .success();
    let peak = peak_per_device(&stamps);
    assert_eq!(peak.keys().collect::<Vec<_>>(), ["a", "b", "c"]);
    assert!(peak.values().all(|&n| n == 1), "{peak:?}");
    for i in 0..9 {
        assert_eq!(status(dir.path(), i)["exit_code"], 0);
    }
}

#[test]
fn a_device_listed_twice_takes_two_children_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(dir.path(), 2);
    // Each child marks its shard, then waits (up to 20 s) for the other shard's mark: both
    // succeed only when they ran at the same time.
    let script = r#"me=$(basename "$(dirname "$FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR")")
if [ "$me" = w0 ]; then other=w1; else other=w0; fi
touch "$0.$me"; i=0
while [ ! -e "$0.$other" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done
[ -e "$0.$other" ]"#;
    let mark = dir.path().join("mark");
    let mark = mark.to_str().expect("utf-8");
    spawn_cmd()
        .args([
            "--plan",
            plan.to_str().expect("utf-8"),
            "--devices",
            "0,0",
            "--backend",
            "cuda",
        ])
        .args(["--", "sh", "-c", script, mark])
        .assert()
        .success();
    assert_eq!(status(dir.path(), 0)["device"], "0");
    assert_eq!(status(dir.path(), 1)["device"], "0");
}

#[test]
fn a_child_past_its_timeout_is_stopped_and_the_rest_go_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(dir.path(), 2);
    spawn_cmd()
        .args(["--plan", plan.to_str().expect("utf-8"), "--devices", "0,1", "--backend", "cuda"])
        .args(["--timeout", "1", "--grace", "0.5", "--"])
        .args(["sh", "-c", r#"case "$FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR" in */w0/rec) trap '' TERM; sleep 60 & wait; sleep 60;; *) echo fine;; esac"#])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("1 timed out"));
    let st = status(dir.path(), 0);
    assert_eq!(st["timed_out"], true);
    assert_eq!(st["signal_name"], "SIGKILL");
    assert_eq!(status(dir.path(), 1)["exit_code"], 0);
}

#[test]
fn a_failed_shard_shows_its_last_log_lines_and_exits_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(dir.path(), 2);
    spawn_cmd()
        .args(["--plan", plan.to_str().expect("utf-8"), "--devices", "0", "--backend", "cuda"])
        .args(["--", "sh", "-c", r#"echo "boom in $FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR"; case "$FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR" in */w1/rec) exit 3;; esac"#])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("shard 1 failed (exit 3); last lines of"))
        .stderr(predicate::str::contains("w1/worker.log"))
        .stderr(predicate::str::contains("boom in"));
    assert_eq!(status(dir.path(), 1)["exit_code"], 3);
}

#[test]
fn a_record_left_by_an_earlier_run_never_passes_for_a_dead_childs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(dir.path(), 1);
    let stale = dir.path().join("w0/rec/mm.json");
    std::fs::create_dir_all(stale.parent().expect("parent")).expect("mkdir");
    std::fs::write(&stale, r#"{"k": {"old": 1}}"#).expect("stale record");
    spawn_cmd()
        .args([
            "--plan",
            plan.to_str().expect("utf-8"),
            "--devices",
            "0",
            "--backend",
            "cuda",
        ])
        .args(["--", "sh", "-c", "exit 9"])
        .assert()
        .code(1);
    assert!(!stale.exists(), "the earlier run's record survived");
    assert!(
        dir.path().join("w0/rec").is_dir(),
        "the child still gets its record folder"
    );
}

fn bad_input(args: &[&str], dir: &Path, needle: &str) {
    spawn_cmd()
        .current_dir(dir)
        .args(args)
        .assert()
        .code(2)
        .stderr(
            predicate::str::starts_with("warmup-spawn: ").or(predicate::str::starts_with("error:")),
        )
        .stderr(predicate::str::contains(needle));
    assert!(!dir.join("w0/rec").exists(), "{args:?} started a child");
}

#[test]
fn bad_input_exits_2_before_any_child_starts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let plan = plan(d, 2);
    let p = plan.to_str().expect("utf-8");
    let cuda = ["--backend", "cuda", "--devices", "0,1"];
    let with = |extra: &[&'static str]| -> Vec<String> {
        let mut v = vec!["--plan".to_owned(), p.to_owned()];
        v.extend(cuda.iter().map(|s| (*s).to_owned()));
        v.extend(extra.iter().map(|s| (*s).to_owned()));
        v
    };
    let run = |args: Vec<String>, needle: &str| {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        bad_input(&refs, d, needle);
    };
    run(
        vec![
            "--plan".into(),
            "nope/plan.json".into(),
            "--backend".into(),
            "cuda".into(),
            "--".into(),
            "true".into(),
        ],
        "nope/plan.json",
    );
    run(with(&[]), "no COMMAND");
    run(
        with(&["--", "no-such-command-xyz"]),
        "\"no-such-command-xyz\" not found in PATH",
    );
    let not_exec = d.join("script.sh");
    std::fs::write(&not_exec, "#!/bin/sh\n").expect("script");
    run(
        {
            let mut v = with(&["--"]);
            v.push(not_exec.display().to_string());
            v
        },
        "not an executable file",
    );
    run(
        {
            let mut v = with(&[]);
            v.splice(
                2..6,
                [
                    "--backend".into(),
                    "cuda".into(),
                    "--devices".into(),
                    "0,,1".into(),
                ],
            );
            v.extend(["--".into(), "true".into()]);
            v
        },
        "device 2 is empty",
    );
    run(with(&["--timeout", "0", "--", "true"]), "positive number");
    run(with(&["--grace", "abc", "--", "true"]), "not a number");
    run(
        vec![
            "--plan".into(),
            p.into(),
            "--backend".into(),
            "metax".into(),
            "--".into(),
            "true".into(),
        ],
        "MACA_VISIBLE_DEVICES",
    );

    std::fs::remove_file(d.join("w1/shapes.yaml")).expect("rm");
    run(with(&["--", "true"]), "shard 1's shape file");
    std::fs::write(&plan, r#"{"version": 2, "op": "mm"}"#).expect("v2");
    run(with(&["--", "true"]), "plan version 2");
}

#[test]
fn auto_backend_follows_vendor_then_visibility_variables() {
    let hip = spawn_cmd()
        .env("FLAGGEMS_VENDOR", "amd")
        .env("HIP_VISIBLE_DEVICES", "2, 3")
        .env("CUDA_VISIBLE_DEVICES", "9")
        .arg("--list-devices")
        .assert()
        .success();
    assert_eq!(String::from_utf8_lossy(&hip.get_output().stdout), "2\n3\n");
    let mlu = spawn_cmd()
        .env("MLU_VISIBLE_DEVICES", "1")
        .arg("--list-devices")
        .assert()
        .success();
    assert_eq!(String::from_utf8_lossy(&mlu.get_output().stdout), "1\n");
    spawn_cmd()
        .env("FLAGGEMS_VENDOR", "acme")
        .arg("--list-devices")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("FLAGGEMS_VENDOR=\"acme\""));
}

#[test]
fn probes_read_a_fake_device_tree() {
    let root = tempfile::tempdir().expect("tempdir");
    let r = root.path();
    std::fs::create_dir_all(r.join("dev")).expect("dev");
    for n in ["davinci0", "davinci1", "davinci2", "davinci_manager"] {
        std::fs::write(r.join("dev").join(n), "").expect("node");
    }
    for gpu in ["0000:3b:00.0", "0000:5e:00.0"] {
        std::fs::create_dir_all(r.join("proc/driver/nvidia/gpus").join(gpu)).expect("gpu");
    }
    let empty_path = r.join("bin");
    std::fs::create_dir_all(&empty_path).expect("bin");
    let list = |args: &[&str]| {
        let out = spawn_cmd()
            .env("WARMUP_PROBE_ROOT", r)
            .env("PATH", &empty_path)
            .args(args)
            .arg("--list-devices")
            .assert()
            .success();
        String::from_utf8_lossy(&out.get_output().stdout).into_owned()
    };
    assert_eq!(list(&["--backend", "ascend"]), "0\n1\n2\n");
    // auto: no vendor, no variable set; the first backend whose probe finds devices is cuda.
    assert_eq!(list(&[]), "0\n1\n");
    spawn_cmd()
        .env("WARMUP_PROBE_ROOT", r)
        .args(["--backend", "cambricon", "--list-devices"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "no devices found: backend cambricon probed /dev/cambricon_devN",
        ));
}
