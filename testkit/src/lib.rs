//! What the tools' process tests share: one way to start a built tool with an environment that
//! a developer's shell cannot change, so every crate's tests scrub by the same policy as the
//! pytest suite's `tests/support.py::clean_env`.
//!
//! A dev-dependency only; no tool links it.

use assert_cmd::Command;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};

/// Variables that steer the tools or the harness: removed from every test's environment.
/// `WARMUP_` covers the fixture harness's knobs, the hidden probe root, the scratch lock a
/// caller holds, and the shard marker of a warmup-spawn the tests themselves may run under.
const SCRUB_PREFIXES: [&str; 4] = ["FLAGGEMS_", "PARALLEL_WARMUP_", "TRITON_", "WARMUP_"];
/// Device visibility lists of every backend (`CUDA_VISIBLE_DEVICES`, `ASCEND_RT_VISIBLE_DEVICES`, ...).
const SCRUB_SUFFIXES: [&str; 1] = ["_VISIBLE_DEVICES"];
/// Single variables that change output (colour).
const SCRUB_NAMES: [&str; 1] = ["NO_COLOR"];

/// Whether the test environment drops `name`.
pub fn scrubbed(name: &str) -> bool {
    SCRUB_PREFIXES.iter().any(|p| name.starts_with(p))
        || SCRUB_SUFFIXES.iter().any(|s| name.ends_with(s))
        || SCRUB_NAMES.contains(&name)
}

/// The built tool at `path` (pass `env!("CARGO_BIN_EXE_warmup-<name>")`), with the scrubbed
/// environment.
pub fn tool(path: impl AsRef<Path>) -> Command {
    Command::from_std(process(path))
}

/// [`tool`] as a plain process, for a test that talks to it while it runs.
pub fn process(path: impl AsRef<Path>) -> std::process::Command {
    let mut cmd = std::process::Command::new(path.as_ref());
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(scrubbed) {
            cmd.env_remove(name);
        }
    }
    cmd
}

/// Reads `child`'s piped stderr until a line holding `text`; all it read, and whether it was
/// found (not found: the stream ended first).
pub fn stderr_until(child: &mut Child, text: &str) -> (String, bool) {
    let stderr = child.stderr.as_mut().expect("stderr piped");
    let mut read = String::new();
    let mut lines = BufReader::new(stderr);
    loop {
        let mut line = String::new();
        if lines.read_line(&mut line).unwrap_or(0) == 0 {
            return (read, false);
        }
        read.push_str(&line);
        if line.contains(text) {
            return (read, true);
        }
    }
}

/// What a killed run leaves holding its scratch lock: a process holding an exclusive `flock` on
/// the lock file while the pid written there is of a process that has ended. Killed when
/// dropped, or by [`Leftover::end`].
#[derive(Debug)]
pub struct Leftover {
    holder: Child,
    /// The ended process the lock file names.
    pub named: u32,
}

impl Leftover {
    /// Holds `lock` (a scratch's `.lock`, made if missing) and writes an ended pid in it.
    pub fn hold(lock: &Path) -> Leftover {
        let mut holder = std::process::Command::new("bash")
            .args([
                "-c",
                r#"exec 9<>"$0" && flock -x 9 && echo held && exec sleep 600"#,
            ])
            .arg(lock)
            .stdout(Stdio::piped())
            .spawn()
            .expect("bash and flock(1) start");
        let mut line = String::new();
        BufReader::new(holder.stdout.take().expect("piped"))
            .read_line(&mut line)
            .expect("the holder says it holds the lock");
        assert_eq!(
            line,
            "held\n",
            "the holder could not lock {}",
            lock.display()
        );
        let mut ended = std::process::Command::new("true")
            .spawn()
            .expect("true starts");
        ended.wait().expect("true ends");
        std::fs::write(lock, format!("{}\n", ended.id())).expect("the lock file is writable");
        Leftover {
            holder,
            named: ended.id(),
        }
    }

    /// Lets go of the lock: the holder is killed and reaped.
    pub fn end(&mut self) {
        let _ = self.holder.kill();
        let _ = self.holder.wait();
    }
}

impl Drop for Leftover {
    fn drop(&mut self) {
        self.end();
    }
}

#[cfg(test)]
mod tests {
    use super::scrubbed;

    #[test]
    fn harness_and_visibility_variables_are_scrubbed_and_others_kept() {
        for name in [
            "FLAGGEMS_PERF_CURRENT_OP",
            "PARALLEL_WARMUP_GPUS",
            "TRITON_CACHE_DIR",
        ] {
            assert!(scrubbed(name), "{name}");
        }
        for name in [
            "CUDA_VISIBLE_DEVICES",
            "ASCEND_RT_VISIBLE_DEVICES",
            "NO_COLOR",
        ] {
            assert!(scrubbed(name), "{name}");
        }
        for name in [
            "WARMUP_PROBE_ROOT",
            "WARMUP_SPAWN_SHARD",
            "WARMUP_FIXTURE_CRASH",
        ] {
            assert!(scrubbed(name), "{name}");
        }
        for name in ["PATH", "HOME", "FLAGGEMS", "VISIBLE_DEVICES_X"] {
            assert!(!scrubbed(name), "{name}");
        }
    }
}
