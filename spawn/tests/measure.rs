//! `warmup-spawn --print-measure-command` as scripts/warmup reads it: NUL-separated words, and
//! exit 3 with nothing printed where the measurement must wait for the sweep.

#[allow(dead_code)] // the plan and status helpers serve the other test files
mod common;

use common::spawn_cmd;

#[test]
fn a_pytest_command_is_printed_nul_separated_with_the_harness_named() {
    spawn_cmd()
        .args(["--print-measure-command", "--", "python3", "-m", "pytest"])
        .args(["b.py", "--shape_file", "my shapes.yaml"])
        .assert()
        .success()
        .stdout("python3\0-m\0pytest\0-p\0warmup_harness\0b.py\0--shape_file\0my shapes.yaml\0")
        .stderr("");
}

#[test]
fn a_command_that_is_not_pytest_or_blocks_the_harness_is_exit_3_with_nothing_printed() {
    for words in [
        &["sh", "-c", "pytest b.py"][..],
        &["pytest", "-p", "no:warmup_harness", "b.py"],
    ] {
        spawn_cmd()
            .args(["--print-measure-command", "--"])
            .args(words)
            .assert()
            .code(3)
            .stdout("")
            .stderr("");
    }
    spawn_cmd()
        .env("PYTEST_ADDOPTS", "-p no:warmup_harness")
        .args(["--print-measure-command", "--", "pytest", "b.py"])
        .assert()
        .code(3)
        .stdout("");
}
