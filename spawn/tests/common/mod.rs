//! What warmup-spawn's process tests share: the tool with the tests' one scrubbed environment
//! (testkit), a run whose children run a shell script, what a run printed, a scratch with a plan
//! of `n` shards, and a shard's status file.

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// warmup-spawn with the environment scrubbed by the tests' one policy (testkit).
pub fn spawn_cmd() -> Command {
    testkit::tool(env!("CARGO_BIN_EXE_warmup-spawn"))
}

/// `warmup-spawn --plan PLAN --backend cuda ARGS -- sh -c SCRIPT`: every child runs the shell
/// SCRIPT.
#[allow(dead_code)] // each test binary uses its own part of this module
pub fn spawn_sh(plan: impl AsRef<Path>, args: &[&str], script: &str) -> Command {
    let mut cmd = spawn_cmd();
    cmd.arg("--plan")
        .arg(plan.as_ref())
        .args(["--backend", "cuda"])
        .args(args)
        .args(["--", "sh", "-c", script]);
    cmd
}

/// What `cmd` printed on stdout; it must exit 0.
#[allow(dead_code)] // each test binary uses its own part of this module
pub fn stdout_of(cmd: &mut Command) -> String {
    let out = cmd.assert().success().get_output().stdout.clone();
    String::from_utf8(out).expect("utf-8 on stdout")
}

/// A scratch folder with `n` shards (w<i>/shapes.yaml) and a v1 plan.
pub fn plan(dir: &Path, n: usize) -> PathBuf {
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

pub fn status(dir: &Path, i: usize) -> Value {
    let text = std::fs::read_to_string(dir.join(format!("w{i}/status.json"))).expect("status.json");
    serde_json::from_str(&text).expect("status is JSON")
}
