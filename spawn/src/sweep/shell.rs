//! `--dry-run` output: one copy-pastable `env -u VAR ... VAR=value ... command args` line per
//! shard, shell-quoted, so that a person can run one shard by hand exactly as the spawner would.

use protocol::status::EnvChanges;

use toolkit::shell::quote;

/// The `env` line that runs `argv` with `env`'s changes.
pub fn env_line(env: &EnvChanges, argv: &[String]) -> String {
    let mut words = vec!["env".to_owned()];
    for var in &env.unset {
        words.push("-u".to_owned());
        words.push(quote(var));
    }
    for (k, v) in &env.set {
        words.push(format!("{k}={}", quote(v)));
    }
    // A program word with `=` would be taken by env as one more assignment.
    if argv.first().is_some_and(|p| p.contains('=')) {
        words.push("--".to_owned());
    }
    words.extend(argv.iter().map(|a| quote(a)));
    words.join(" ")
}

/// `--dry-run`: prints each shard's device and its `env` line; runs nothing.
pub fn dry_run(prepared: &crate::sweep::prepare::PreparedRun) -> anyhow::Result<toolkit::Status> {
    use anyhow::Context;
    use std::io::Write;
    let devices = &prepared.devices;
    let mut out = std::io::stdout().lock();
    for (i, job) in prepared.jobs.iter().enumerate() {
        let device = &devices[i % devices.len()];
        writeln!(out, "# shard {} on device {device}", job.shard)
            .and_then(|()| {
                let argv = crate::sweep::job::lossy(&job.argv);
                writeln!(out, "{}", env_line(&job.env_on(device), &argv))
            })
            .context("writing to stdout")?;
    }
    Ok(toolkit::Status::Done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_line_unsets_then_sets_then_runs() {
        let env = EnvChanges {
            set: vec![("CUDA_VISIBLE_DEVICES".into(), "MIG-1 2".into())],
            unset: vec!["PARALLEL_WARMUP_GPUS".into()],
        };
        assert_eq!(
            env_line(&env, &["pytest".into(), "-k".into(), "a and b".into()]),
            "env -u PARALLEL_WARMUP_GPUS CUDA_VISIBLE_DEVICES='MIG-1 2' pytest -k 'a and b'"
        );
    }
}
