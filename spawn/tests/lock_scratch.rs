//! `warmup-spawn --lock-scratch SCRATCH`: the scratch lock taken for the caller on the
//! descriptor it lends, held after the tool exits, refused to a second caller naming the first.

use predicates::prelude::*;

/// bash lends a descriptor on SCRATCH/.lock, takes the lock through warmup-spawn, then a second
/// shell (its own descriptor) tries; then the holder lets go and the second one gets it.
const SCRIPT: &str = r#"
exec {fd}<>"$1/.lock"; export WARMUP_SCRATCH_LOCK_FD=$fd
"$0" --lock-scratch "$1" || exit 10
echo "holder $$ $(cat "$1/.lock")"
bash -c 'exec {g}<>"$1/.lock"; WARMUP_SCRATCH_LOCK_FD=$g "$0" --lock-scratch "$1"' "$0" "$1" && exit 11
exec {fd}>&-
bash -c 'exec {g}<>"$1/.lock"; WARMUP_SCRATCH_LOCK_FD=$g "$0" --lock-scratch "$1"' "$0" "$1" || exit 12
echo freed
"#;

#[test]
fn the_lock_is_the_callers_after_the_tool_exits_and_refused_to_another() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new("bash")
        .args(["-c", SCRIPT, env!("CARGO_BIN_EXE_warmup-spawn")])
        .arg(dir.path())
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let holder: Vec<&str> = stdout.lines().next().expect("a line").split(' ').collect();
    assert_eq!(holder[1], holder[2], "the file names the caller: {stdout}");
    assert!(stdout.ends_with("freed\n"), "{stdout}");
    let refused = format!(
        "{}: this scratch folder is in use by another run (pid {} holds",
        dir.path().display(),
        holder[1]
    );
    assert!(stderr.contains(&refused), "{stderr}");
}

#[test]
fn without_a_lent_descriptor_it_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    testkit::tool(env!("CARGO_BIN_EXE_warmup-spawn"))
        .arg("--lock-scratch")
        .arg(dir.path())
        .env("WARMUP_SCRATCH_LOCK_FD", "99")
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "names no descriptor of the caller open on",
        ));
}
