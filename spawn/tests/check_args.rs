//! `warmup-spawn --check-args ARGS...`: ARGS checked as a run would read them, none required,
//! nothing run or written; exit 0, or 2 with the run's own message.

use predicates::prelude::*;

#[allow(dead_code)] // status(): the other tests read status files
mod common;
use common::{plan, spawn_cmd};

#[test]
fn good_arguments_pass_and_nothing_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(dir.path(), 4);
    spawn_cmd()
        .args([
            "--check-args",
            "--backend",
            "nvidia",
            "--devices",
            "0,GPU-1",
            "--timeout",
            "5",
        ])
        .args(["--grace", "1", "--max-log", "200M", "--plan"])
        .arg(&plan)
        .args(["--only", "1,3", "--", "false"])
        .assert()
        .code(0)
        .stdout("")
        .stderr("");
    assert!(
        !dir.path().join(".lock").exists(),
        "the check took the scratch lock"
    );
    assert!(!dir.path().join("w1/status.json").exists());
}

#[test]
fn each_bad_argument_is_a_usage_error_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = plan(dir.path(), 4);
    let plan = plan.to_str().expect("utf-8");
    for (args, needle) in [
        (
            vec!["--backend", "bogus"],
            "--backend \"bogus\": known backends are",
        ),
        (
            vec!["--devices", ",,"],
            "--devices \",,\": device 1 is empty",
        ),
        (
            vec!["--timeout", "abc"],
            "invalid value 'abc' for '--timeout",
        ),
        (vec!["--grace=-1"], "give a positive number of seconds"),
        (
            vec!["--max-log", "1.5M"],
            "invalid value '1.5M' for '--max-log",
        ),
        (
            vec!["--plan", plan, "--only", "3,9"],
            "shard 9 is not in the plan",
        ),
        (
            vec!["--plan", plan, "--op", "addmm"],
            "the plan is for op \"mm\"",
        ),
    ] {
        spawn_cmd()
            .arg("--check-args")
            .args(&args)
            .assert()
            .code(2)
            .stdout("")
            .stderr(predicate::str::starts_with("warmup-spawn: "))
            .stderr(predicate::str::contains(needle));
    }
}
