//! warmup-plan as a process: whose name its messages carry, and what it answers before it
//! decides anything.

use predicates::prelude::*;

fn plan() -> assert_cmd::Command {
    testkit::tool(env!("CARGO_BIN_EXE_warmup-plan"))
}

#[test]
fn run_for_a_driver_it_speaks_as_the_driver_and_run_directly_as_itself() {
    // Issue 29: run by hand, its errors said `warmup:`.
    plan()
        .args(["--gpus", "x", "--", "true"])
        .assert()
        .code(2)
        .stdout("")
        .stderr(
            predicate::str::starts_with("warmup-plan: error: invalid value 'x' for '--gpus <N>'")
                .and(predicate::str::ends_with(
                    "warmup-plan: run 'warmup-plan --help' for usage\n",
                ))
                .and(predicate::str::contains("\nwarmup:").not()),
        );
    for driver in ["warmup", "warmup-slurm"] {
        plan()
            .args(["--for", driver, "--bogus", "--", "true"])
            .assert()
            .code(2)
            .stderr(format!(
                "{driver}: unknown option '--bogus' (COMMAND goes after --)\n\
                 {driver}: run '{driver} --help' for usage\n"
            ));
    }
}

#[test]
fn a_command_that_cannot_run_is_exit_127_and_nothing_decided() {
    plan()
        .args(["--for", "warmup", "--gpus", "2", "--", "no-such-command-xyz"])
        .env("PATH", "/usr/bin:/bin")
        .assert()
        .code(127)
        .stdout("")
        .stderr(
            "warmup: COMMAND \"no-such-command-xyz\" not found in PATH (or not executable); give its path or fix PATH\n",
        );
}

#[test]
fn it_and_its_drivers_answer_version() {
    let version = env!("CARGO_PKG_VERSION");
    plan()
        .arg("--version")
        .assert()
        .success()
        .stdout(format!("warmup-plan {version}\n"));
    // A driver's --version is text the driver prints, as its --help is.
    for driver in ["warmup", "warmup-slurm"] {
        plan()
            .args(["--for", driver, "--version"])
            .assert()
            .success()
            .stdout(format!("decision=help\ntext='{driver} {version}\n'\n"));
    }
}

#[test]
fn a_plain_decision_makes_nothing_and_a_sweep_makes_the_record_cache_folder_it_uses() {
    let home = tempfile::tempdir().expect("tempdir");
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("s.yaml"), "mm:\n  shapes: [[1, 2]]\n").expect("shapes");
    let decide = |gpus: &str| {
        plan()
            .args([
                "--for",
                "warmup",
                "--backend",
                "cuda",
                "--devices",
                "0,1",
                "--gpus",
            ])
            .args([gpus, "--", "true", "--shape_file", "s.yaml"])
            .env("HOME", home.path())
            .env_remove("XDG_CACHE_HOME")
            .env("FLAGGEMS_PERF_CURRENT_OP", "mm")
            .current_dir(work.path())
            .assert()
            .success()
    };
    decide("1").stdout(predicate::str::starts_with("decision=plain\n"));
    assert!(
        std::fs::read_dir(home.path())
            .expect("read")
            .next()
            .is_none(),
        "a plain run made something"
    );
    decide("2").stdout(predicate::str::starts_with("decision=sweep\n"));
    let records = home.path().join(".cache/parallel-warmup/records");
    let folders: Vec<_> = std::fs::read_dir(&records)
        .expect("the cache, made")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(folders.len(), 1, "{folders:?}");
    assert!(
        folders[0].join(".mm.used").is_file(),
        "the op's use, stamped"
    );
}

#[test]
fn after_for_driver_every_word_is_the_drivers() {
    // A driver's user cannot reach warmup-plan's own options through the driver's command line.
    for own in ["--format", "--man", "--for"] {
        plan()
            .args(["--for", "warmup", own, "json", "--", "true"])
            .assert()
            .code(2)
            .stdout("")
            .stderr(format!(
                "warmup: unknown option '{own}' (COMMAND goes after --)\n\
                 warmup: run 'warmup --help' for usage\n"
            ));
    }
    plan()
        .args(["--for", "warmup-slurm", "-h"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with(
            "decision=help\ntext='Sweep the autotune",
        ));
}
