//! warmup-spawn driven as a process: argv and environment of the children, dry runs, device
//! selection and the pool, bad input, backend choice and probes on a fake tree, timeouts, the
//! run summary, logs and their cap.

use predicates::prelude::*;
use std::path::Path;
use std::time::{Duration, Instant};

mod common;
use common::{plan, spawn_cmd, spawn_sh, status, stdout_of};

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
        .env("TRITON_CACHE_DIR", "/home/u/.triton/cache")
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
        // The caller's cache, shared: each kernel is compiled once for every child.
        assert!(has("TRITON_CACHE_DIR=/home/u/.triton/cache"), "{env}");
        assert!(has("WARMUP_SPAWN_CHILDREN=2"), "{env}");
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
fn the_children_alone_get_the_fresh_or_resume_choice_and_fresh_wins() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(dir.path(), 1);
    let line = |extra: &[&str]| {
        let text = stdout_of(
            spawn_cmd()
                .args(["--plan", plan.to_str().expect("utf-8"), "--dry-run"])
                .args(["--devices", "0", "--backend", "cuda"])
                .args(extra)
                .args(["--", "true"]),
        );
        text.lines().nth(1).expect("an env line").to_owned()
    };
    let resume = line(&["--resume-dir", "/r d"]);
    assert!(
        resume.contains(" WARMUP_HARNESS_RESUME_DIR='/r d' "),
        "{resume}"
    );
    assert!(!resume.contains("WARMUP_HARNESS_FRESH"), "{resume}");
    let fresh = line(&["--resume-dir", "/r", "--fresh"]);
    assert!(fresh.contains(" WARMUP_HARNESS_FRESH=1 "), "{fresh}");
    assert!(!fresh.contains("WARMUP_HARNESS_RESUME_DIR"), "{fresh}");
    let neither = line(&[]);
    assert!(
        !neither.contains("WARMUP_HARNESS_RESUME_DIR") && !neither.contains("WARMUP_HARNESS_FRESH"),
        "{neither}"
    );
}

#[test]
fn dry_run_prints_env_lines_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(dir.path(), 3);
    let text = stdout_of(
        spawn_cmd()
            .args([
                "--plan",
                plan.to_str().expect("utf-8"),
                "--dry-run",
                "--devices",
                "MIG-1/2, 4",
                "--backend",
                "cuda",
            ])
            .args(["--", "true", "-k", "it's", "--shape_file", "a.yaml"]),
    );
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
fn cache_per_child_gives_each_child_its_own_triton_cache_in_the_scratch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(dir.path(), 3);
    let text = stdout_of(
        spawn_cmd()
            .args(["--plan", plan.to_str().expect("utf-8"), "--dry-run"])
            .args(["--devices", "0,1", "--backend", "cuda", "--cache-per-child"])
            .args(["--", "true"])
            .env("TRITON_CACHE_DIR", "/home/u/.triton/cache"),
    );
    let root = std::path::absolute(dir.path()).expect("absolute");
    for i in 0..3 {
        let line = text
            .lines()
            .filter(|l| l.starts_with("env "))
            .nth(i)
            .expect("an env line per shard");
        let cache = root.join(format!("w{i}/.triton_cache"));
        assert!(
            line.contains(&format!(" TRITON_CACHE_DIR={} ", cache.display())),
            "{line}"
        );
        // Three shards on two devices: two children at a time.
        assert!(line.contains(" WARMUP_SPAWN_CHILDREN=2 "), "{line}");
    }
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
    // Each child marks its shard, then waits (up to 600 s, a hang guard: the machine may be
    // loaded) for the other shard's mark: both succeed only when they ran at the same time.
    let script = r#"me=$(basename "$(dirname "$FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR")")
if [ "$me" = w0 ]; then other=w1; else other=w0; fi
touch "$0.$me"; i=0
while [ ! -e "$0.$other" ] && [ $i -lt 12000 ]; do sleep 0.05; i=$((i+1)); done
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
        // Long enough for shard 1's `echo` to end in time on a loaded machine.
        .args(["--timeout", "5", "--grace", "0.5", "--"])
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

#[test]
fn bad_input_exits_2_before_any_child_starts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let plan = plan(d, 2);
    let p = plan.to_str().expect("utf-8");
    let not_exec = d.join("script.sh");
    std::fs::write(&not_exec, "#!/bin/sh\n").expect("script");
    let not_exec = not_exec.to_str().expect("utf-8");
    let missing_summary = d.join("no/such/summary");
    let missing_summary = missing_summary.to_str().expect("utf-8");
    // Every case runs with `--backend cuda` and, unless it gives its own, `--plan PLAN` and
    // `--devices 0,1`.
    let with = |extra: &[&str]| -> Vec<String> {
        let mut args = vec!["--backend".to_owned(), "cuda".to_owned()];
        if !extra.contains(&"--plan") {
            args.extend(["--plan".to_owned(), p.to_owned()]);
        }
        if !extra.contains(&"--devices") {
            args.extend(["--devices".to_owned(), "0,1".to_owned()]);
        }
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        args
    };
    // (arguments, what the message must say)
    let cases = [
        (
            with(&["--plan", "nope/plan.json", "--", "true"]),
            "nope/plan.json",
        ),
        (with(&[]), "no COMMAND"),
        (
            with(&["--", "no-such-command-xyz"]),
            "\"no-such-command-xyz\" not found in PATH",
        ),
        (with(&["--", not_exec]), "not an executable file"),
        (
            with(&["--devices", "0,,1", "--", "true"]),
            "device 2 is empty",
        ),
        (
            with(&["--timeout", "0", "--", "true"]),
            "give a number of seconds above 0, at most 1e9",
        ),
        (
            with(&["--grace", "1e300", "--", "true"]),
            "\"1e300\": give a number of seconds above 0, at most 1e9",
        ),
        (with(&["--grace", "abc", "--", "true"]), "not a number"),
        (with(&["--max-log", "12Q", "--", "true"]), "such as 512K"),
        (
            with(&["--summary", missing_summary, "--", "true"]),
            "does not exist",
        ),
        (
            with(&["--summary", "-", "--dry-run", "--", "true"]),
            "cannot be used with",
        ),
        (
            ["--plan", p, "--backend", "metax", "--", "true"]
                .map(String::from)
                .to_vec(),
            "MACA_VISIBLE_DEVICES",
        ),
    ];
    for (args, needle) in &cases {
        spawn_cmd()
            .current_dir(d)
            .args(args)
            .assert()
            .code(2)
            .stderr(predicate::str::starts_with("warmup-spawn: "))
            .stderr(predicate::str::contains(*needle));
        assert!(!d.join("w0/rec").exists(), "{args:?} started a child");
    }

    // Plans that went wrong after they were written.
    std::fs::remove_file(d.join("w1/shapes.yaml")).expect("rm");
    let cases = [
        ("", "shard 1's shape file"),
        (r#"{"version": 2, "op": "mm"}"#, "plan version 2"),
    ];
    for (plan_text, needle) in cases {
        if !plan_text.is_empty() {
            std::fs::write(&plan, plan_text).expect("plan");
        }
        spawn_cmd()
            .args(with(&["--", "true"]))
            .assert()
            .code(2)
            .stderr(predicate::str::contains(needle));
        assert!(!d.join("w0/rec").exists(), "{needle}: started a child");
    }
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

/// The run summary's `name value` lines (the shard lines as `shard INDEX` -> "OUTCOME LOG").
fn summary_lines(text: &str) -> std::collections::BTreeMap<String, String> {
    text.lines()
        .map(|line| {
            let (name, rest) = line.split_once(' ').expect("name value");
            match name {
                "shard" => {
                    let (index, rest) = rest.split_once(' ').expect("index");
                    (format!("shard {index}"), rest.to_owned())
                }
                _ => (name.to_owned(), rest.to_owned()),
            }
        })
        .collect()
}

#[test]
fn the_summary_counts_outcomes_and_names_each_shards_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().join("a scratch");
    std::fs::create_dir(&d).expect("mkdir");
    let plan = plan(&d, 3);
    let out = spawn_cmd()
        .args(["--plan", plan.to_str().expect("utf-8"), "--backend", "cuda"])
        .args(["--devices", "0,1,2", "--summary", "-", "--", "sh", "-c"])
        .arg(r#"case "$FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR" in */w1/rec) exit 4;; esac"#)
        .assert()
        .code(1)
        .get_output()
        .clone();
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert!(text.starts_with("version 1\n"), "{text}");
    let got = summary_lines(&text);
    for (name, value) in [
        ("op", "mm"),
        ("shards", "3"),
        ("ok", "2"),
        ("failed", "1"),
        ("timed_out", "0"),
        ("stopped", "0"),
        ("not_started", "0"),
    ] {
        assert_eq!(
            got.get(name).map(String::as_str),
            Some(value),
            "{name}: {text}"
        );
    }
    let root = std::path::absolute(&d).expect("absolute");
    for (i, outcome) in [(0, "ok"), (1, "failed"), (2, "ok")] {
        let log = root.join(format!("w{i}/worker.log"));
        assert_eq!(
            got[&format!("shard {i}")],
            format!("{outcome} {}", log.display())
        );
    }
    let seconds = |name: &str| got[name].parse::<f64>().expect("seconds");
    // Children this quick can round to 0.00: the values must be there and be seconds.
    assert!(
        seconds("summed_seconds") >= 0.0 && seconds("wall_seconds") >= 0.0,
        "{text}"
    );
    // The people's summary stays on stderr.
    assert!(String::from_utf8_lossy(&out.stderr).contains("3 shards: 2 ok, 1 failed"));

    // To a file: the same lines, written whole.
    let file = dir.path().join("summary.txt");
    spawn_cmd()
        .args(["--plan", plan.to_str().expect("utf-8"), "--backend", "cuda"])
        .args([
            "--devices",
            "0",
            "--summary",
            file.to_str().expect("utf-8"),
            "--",
            "true",
        ])
        .assert()
        .success()
        .stdout("");
    let got = summary_lines(&std::fs::read_to_string(&file).expect("summary"));
    assert_eq!(got["ok"], "3");
}

#[test]
fn max_log_keeps_the_start_of_a_flood_and_says_what_was_dropped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(dir.path(), 1);
    // 4 MiB of output, and a last line on stderr that must not block either.
    spawn_cmd()
        .args(["--plan", plan.to_str().expect("utf-8"), "--backend", "cuda"])
        .args(["--devices", "0", "--max-log", "64K", "--", "sh", "-c"])
        .arg("head -c 4194304 /dev/zero | tr '\\0' x; echo; echo done >&2")
        .assert()
        .success();
    let log = std::fs::read(dir.path().join("w0/worker.log")).expect("log");
    assert!(log.len() < 65536 + 300, "{} bytes kept", log.len());
    assert!(log[..65536].iter().all(|&b| b == b'x'));
    let note = String::from_utf8_lossy(&log[65536..]);
    assert!(note.contains("reached --max-log (65536 bytes)"), "{note}");
    assert!(
        note.contains("bytes of output dropped past --max-log"),
        "{note}"
    );
}

#[test]
fn a_child_that_exits_0_on_sigterm_is_summarised_stopped_not_ok() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(dir.path(), 1);
    let started = dir.path().join("w0/rec/started");
    let mut run = std::process::Command::new(assert_cmd::cargo::cargo_bin("warmup-spawn"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").expect("PATH"))
        .args(["--plan", plan.to_str().expect("utf-8"), "--backend", "cuda"])
        .args(["--devices", "0", "--grace", "60", "--summary", "-", "--"])
        .args(["sh", "-c"])
        .arg(r#"trap 'exit 0' TERM; touch "$FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR/started"; while :; do sleep 0.02; done"#)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run");
    let end = Instant::now() + Duration::from_secs(120);
    while !started.exists() {
        assert!(Instant::now() < end, "the child never started");
        assert!(run.try_wait().expect("try_wait").is_none(), "ended early");
        std::thread::sleep(Duration::from_millis(20));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(run.id()).expect("pid")),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("SIGTERM");
    let out = run.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(143));
    let st = status(dir.path(), 0);
    assert_eq!(
        (st["exit_code"].as_i64(), &st["interrupted"]),
        (Some(0), &true.into())
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let got = summary_lines(&text);
    assert_eq!(
        (got["ok"].as_str(), got["stopped"].as_str()),
        ("0", "1"),
        "{text}"
    );
    assert!(got["shard 0"].starts_with("stopped "), "{text}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("0 ok, 0 failed, 0 timed out, 1 stopped"),
        "{err}"
    );
    assert!(err.contains("shard 0 stopped (exit 0)"), "{err}");
}

#[test]
fn command_comes_only_after_a_double_dash_as_scripts_warmup_takes_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(dir.path(), 2);
    spawn_cmd()
        .args(["--backend", "cuda", "--devices", "0,1", "--plan"])
        .arg(&plan)
        .args(["sh", "-c", "exit 0"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("unexpected argument 'sh'")
                .and(predicate::str::contains("-- <COMMAND>...")),
        );
    assert!(
        !dir.path().join("w0").join("status.json").exists(),
        "nothing ran"
    );
}

#[test]
fn a_caller_op_that_contradicts_the_plan_is_refused_before_anything_runs_even_measuring() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(dir.path(), 2);
    let ran = dir.path().join("ran");
    let touch = format!("touch '{}'", ran.display());
    for measure in [false, true] {
        let args: &[&str] = if measure {
            &["--devices", "0,1", "--measure"]
        } else {
            &["--devices", "0,1"]
        };
        spawn_sh(&plan, args, &touch)
            .env("FLAGGEMS_PERF_CURRENT_OP", "addmm")
            .assert()
            .code(2)
            .stderr(predicate::str::contains(
                "the plan is for op \"mm\", not \"addmm\"",
            ));
        assert!(!ran.exists(), "COMMAND ran (measure: {measure})");
    }
    // Unset, the plan's op reaches every child.
    spawn_sh(&plan, &["--devices", "0,1"], RECORDER)
        .assert()
        .success();
    let env = std::fs::read_to_string(dir.path().join("w1/rec/env")).expect("env");
    assert!(
        env.lines().any(|l| l == "FLAGGEMS_PERF_CURRENT_OP=mm"),
        "{env}"
    );
}
