//! What the tools' process tests share: one way to start a built tool with an environment that
//! a developer's shell cannot change, so every crate's tests scrub by the same policy as the
//! pytest suite's `tests/support.py::clean_env`.
//!
//! A dev-dependency only; no tool links it.

use assert_cmd::Command;
use std::path::Path;

/// Variables that steer the tools or the harness: removed from every test's environment.
const SCRUB_PREFIXES: [&str; 4] = [
    "FLAGGEMS_",
    "PARALLEL_WARMUP_",
    "TRITON_",
    "WARMUP_FIXTURE_",
];
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
    let mut cmd = Command::new(path.as_ref());
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(scrubbed) {
            cmd.env_remove(name);
        }
    }
    cmd
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
        for name in ["PATH", "HOME", "FLAGGEMS", "VISIBLE_DEVICES_X"] {
            assert!(!scrubbed(name), "{name}");
        }
    }
}
