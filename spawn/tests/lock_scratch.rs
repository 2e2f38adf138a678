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

/// `warmup-spawn --lock-scratch SCRATCH` as scripts/warmup runs it, from bash lending its own
/// descriptor on SCRATCH/.lock, its stderr piped. bash execs the tool, so the caller it names
/// in the file (its parent) is this test process.
fn lock_for_a_caller(scratch: &std::path::Path) -> std::process::Child {
    testkit::process("bash")
        .args([
            "-c",
            r#"exec {fd}<>"$1/.lock"; export WARMUP_SCRATCH_LOCK_FD=$fd; exec "$0" --lock-scratch "$1""#,
            env!("CARGO_BIN_EXE_warmup-spawn"),
        ])
        .arg(scratch)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("bash runs")
}

fn waiting_line(scratch: &std::path::Path, leftover: &testkit::Leftover) -> String {
    format!(
        "warmup-spawn: {}: pid {}, which holds this scratch, has ended; waiting up to 15 s",
        scratch.display(),
        leftover.named
    )
}

#[test]
fn a_run_started_again_at_once_waits_for_what_the_killed_one_left() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut leftover = testkit::Leftover::hold(&dir.path().join(".lock"));
    let mut caller = lock_for_a_caller(dir.path());
    let (said, found) = testkit::stderr_until(&mut caller, &waiting_line(dir.path(), &leftover));
    assert!(found, "{said}");
    leftover.end();
    let done = caller.wait_with_output().expect("ends");
    let rest = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(0), "{said}{rest}");
    let holder = std::fs::read_to_string(dir.path().join(".lock")).expect("lock file");
    assert_eq!(
        holder.trim(),
        std::process::id().to_string(),
        "{said}{rest}"
    );
}

#[test]
fn what_a_killed_run_left_is_waited_for_15_s_then_named_with_what_to_do() {
    let dir = tempfile::tempdir().expect("tempdir");
    let leftover = testkit::Leftover::hold(&dir.path().join(".lock"));
    let started = std::time::Instant::now();
    let done = lock_for_a_caller(dir.path())
        .wait_with_output()
        .expect("ends");
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(2), "{stderr}");
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(15),
        "{stderr}"
    );
    assert!(
        stderr.contains(&waiting_line(dir.path(), &leftover)),
        "{stderr}"
    );
    let lock = dir.path().join(".lock");
    let refused = format!(
        "{}: this scratch folder is still locked 15 s after pid {}, which held it, ended: a \
         process it started holds {} open (`fuser -v {}` names it); end that process, or give \
         another scratch folder",
        dir.path().display(),
        leftover.named,
        lock.display(),
        lock.display()
    );
    assert!(stderr.contains(&refused), "{stderr}");
}
