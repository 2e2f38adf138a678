//! warmup-costs as a process: `--predict` on histories that cannot be used, and a record folder that is none.

use predicates::prelude::*;
use std::path::Path;
use std::time::Duration;

fn predict(rec: &Path) -> assert_cmd::assert::Assert {
    testkit::tool(env!("CARGO_BIN_EXE_warmup-costs"))
        .args([
            "--predict",
            "--op",
            "mm",
            "--devices",
            "0,1",
            "--triton",
            "3.6.0",
        ])
        .args(["--device-model", "NVIDIA H200", "--record-dir"])
        .arg(rec)
        // A read that waited on a FIFO or read /dev/zero to the end would pass this.
        .timeout(Duration::from_secs(60))
        .assert()
}

fn sidecar(rec: &Path, tune: &str) {
    std::fs::write(
        rec.join("mm.meta.json"),
        format!(
            r#"{{"format": "warmup-harness-meta", "version": 1, "op": "mm",
                "tune_seconds": {{"k": {tune}}}, "triton": "3.6.0", "device": "NVIDIA H200",
                "startup_seconds": 1.0, "compile_seconds": 0.0}}"#
        ),
    )
    .expect("sidecar");
}

/// Exit 0 with `decision warmup`, the summary of no usable history, and a line saying why.
fn no_usable_history(assert: assert_cmd::assert::Assert, why: &str) {
    assert
        .success()
        .stdout("version 1\nop mm\ndecision warmup\n")
        .stderr(
            predicate::str::contains("no usable history")
                .and(predicate::str::contains(why))
                .and(predicate::str::contains("inf").not())
                .and(predicate::str::contains("NaN").not()),
        );
}

#[test]
fn tune_seconds_whose_sum_overflows_are_no_usable_history_never_inf_or_nan() {
    let rec = tempfile::tempdir().expect("tempdir");
    sidecar(rec.path(), r#"{"[1]": 1.7e308, "[2]": 1.7e308}"#);
    std::fs::write(
        rec.path().join("mm.costs.json"),
        r#"{"mm": {"[1]": 2.0, "[2]": 3.0}}"#,
    )
    .expect("costs");
    no_usable_history(predict(rec.path()), "add up past the largest number");
}

#[test]
fn a_sidecar_that_is_a_fifo_is_refused_at_once() {
    let rec = tempfile::tempdir().expect("tempdir");
    let made = std::process::Command::new("mkfifo")
        .arg(rec.path().join("mm.meta.json"))
        .status()
        .expect("mkfifo");
    assert!(made.success());
    no_usable_history(predict(rec.path()), "is a FIFO, not a regular file");
}

#[test]
fn a_cost_file_that_is_dev_zero_is_refused_at_once() {
    let rec = tempfile::tempdir().expect("tempdir");
    sidecar(rec.path(), r#"{"[1]": 2.0}"#);
    std::os::unix::fs::symlink("/dev/zero", rec.path().join("mm.costs.json")).expect("symlink");
    no_usable_history(
        predict(rec.path()),
        "is a character device, not a regular file",
    );
}

#[test]
fn a_record_folder_that_is_a_file_is_a_usage_error_as_in_warmup() {
    // Issue 29: --predict took it for no history and exited 0, where scripts/warmup exits 2.
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("rec");
    std::fs::write(&file, "").expect("file");
    predict(&file).code(2).stdout("").stderr(predicate::str::contains(format!(
        "warmup-costs: error: invalid value '{0}' for '--record-dir <DIR>': {0} is not a folder but a file",
        file.display()
    )));
    let missing = dir.path().join("none");
    no_usable_history(predict(&missing), "no usable history");
}
