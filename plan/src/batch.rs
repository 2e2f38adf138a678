//! warmup-slurm's two batch scripts, as text the script writes once Slurm has judged them:
//! `SCRATCH/slurm/shard.sbatch` (one warmup-spawn per task of the job array, on that task's
//! shard and GPU) and `SCRATCH/slurm/finish.sbatch` (the script's `--finish`, after the array).
//!
//! Each sbatch option is one `#SBATCH` line written so that sbatch reads back exactly what was
//! given: sbatch reads a directive's words as a shell would, but ends the line at an unquoted `#`
//! and takes a backslash as an escape even inside quotes. So the value goes in double quotes, with
//! `\` and `"` escaped; only a newline cannot be written. In an `--output` file name Slurm expands
//! `%`-patterns (`%%` is a `%`), and a backslash anywhere turns the patterns off (and is dropped),
//! so a folder holding one cannot be written. Every other word is quoted by toolkit's shell rule.

use anyhow::{bail, Result};
use protocol::layout::Scratch;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use toolkit::shell::quote_bytes;

/// Who writes the scripts, for their opening comments.
const WRITER: &str = "warmup-slurm";

/// What the two batch scripts are made of.
#[derive(Debug)]
pub struct Batch<'a> {
    pub op: &'a str,
    pub scratch: &'a Scratch,
    /// Where the jobs start (`--chdir`): the folder warmup-slurm was run in.
    pub cwd: &'a Path,
    /// The sbatch options both scripts carry (`--partition=NAME`, then each `--sbatch-arg`).
    pub options: Vec<String>,
    /// warmup-spawn, which each task runs; its folder is the finishing job's `WARMUP_BIN_DIR`.
    pub spawn: &'a Path,
    /// scripts/warmup-slurm, which the finishing job runs with `--finish`.
    pub script: &'a Path,
    /// `--gres=gpu:N` per task, none for 0.
    pub gpus_per_task: u64,
    /// `--time` per task.
    pub time: Option<&'a str>,
    /// warmup-spawn's options for each task, beyond the shard plan and its index.
    pub spawn_argv: &'a [OsString],
    pub command: &'a [OsString],
    /// The finishing job's `--record-dir`.
    pub record_dir: Option<&'a Path>,
}

impl Batch<'_> {
    /// The array's batch script: one warmup-spawn per task, on that task's shard and GPU, its
    /// run summary in `SCRATCH/slurm/shard-<i>.summary` (an earlier run's removed as it starts).
    pub fn shard_script(&self) -> Result<Vec<u8>> {
        let slurm = self.scratch.slurm();
        let mut out = format!(
            "#!/bin/bash\n# One shard of op {op} per task of a Slurm job array; written by \
             {WRITER}.\n# Re-run shards alone: {WRITER} --rerun LIST --scratch ",
            op = self.op
        )
        .into_bytes();
        out.extend_from_slice(self.scratch.root().as_os_str().as_bytes());
        out.push(b'\n');
        directive(
            &mut out,
            format!("--job-name=warmup-{}", self.op).as_bytes(),
        )?;
        output_directive(&mut out, &slurm, "shard-%A_%a.out")?;
        directive(&mut out, &prefixed("--chdir=", self.cwd.as_os_str()))?;
        if self.gpus_per_task != 0 {
            directive(
                &mut out,
                format!("--gres=gpu:{}", self.gpus_per_task).as_bytes(),
            )?;
        }
        if let Some(time) = self.time {
            directive(&mut out, format!("--time={time}").as_bytes())?;
        }
        self.options(&mut out)?;
        out.extend_from_slice(b"export FLAGGEMS_PERF_CURRENT_OP=");
        out.extend(quote_bytes(self.op.as_bytes()));
        // The task's shell expands $SLURM_ARRAY_TASK_ID and $summary.
        out.extend_from_slice(b"\nsummary=");
        out.extend(quote_bytes(slurm.as_os_str().as_bytes()));
        out.extend_from_slice(
            b"/shard-\"${SLURM_ARRAY_TASK_ID:?is not set: submit this with sbatch --array}\".summary\n\
              rm -f -- \"$summary\"\nexec",
        );
        let shard_plan = self.scratch.shard_plan();
        words(
            &mut out,
            [
                self.spawn.as_os_str(),
                OsStr::new("--plan"),
                shard_plan.as_os_str(),
                OsStr::new("--index-from-env"),
                OsStr::new("SLURM_ARRAY_TASK_ID"),
            ]
            .into_iter()
            .chain(self.spawn_argv.iter().map(OsString::as_os_str)),
        );
        out.extend_from_slice(b" --summary \"$summary\"");
        words(
            &mut out,
            std::iter::once(OsStr::new("--")).chain(self.command.iter().map(OsString::as_os_str)),
        );
        out.push(b'\n');
        Ok(out)
    }

    /// The finishing job's batch script: warmup-slurm's `--finish`, with the tools' folder.
    pub fn finish_script(&self) -> Result<Vec<u8>> {
        let mut out = format!(
            "#!/bin/bash\n# Merges and publishes the shards of op {op} once its array is done; \
             written by {WRITER}.\n",
            op = self.op
        )
        .into_bytes();
        directive(
            &mut out,
            format!("--job-name=warmup-{}-finish", self.op).as_bytes(),
        )?;
        output_directive(&mut out, &self.scratch.slurm(), "finish-%j.out")?;
        directive(&mut out, &prefixed("--chdir=", self.cwd.as_os_str()))?;
        directive(&mut out, b"--time=10:00")?;
        self.options(&mut out)?;
        out.extend_from_slice(b"export ");
        out.extend_from_slice(toolkit::tools::BIN_DIR.as_bytes());
        out.push(b'=');
        let tools = self.spawn.parent().unwrap_or(Path::new("/"));
        out.extend(quote_bytes(tools.as_os_str().as_bytes()));
        out.extend_from_slice(b"\nexec");
        let mut argv = vec![
            self.script.as_os_str(),
            OsStr::new("--finish"),
            OsStr::new("--scratch"),
            self.scratch.root().as_os_str(),
            OsStr::new("--op"),
            OsStr::new(self.op),
        ];
        if let Some(dir) = self.record_dir {
            argv.extend([OsStr::new("--record-dir"), dir.as_os_str()]);
        }
        words(&mut out, argv.into_iter());
        out.push(b'\n');
        Ok(out)
    }

    fn options(&self, out: &mut Vec<u8>) -> Result<()> {
        for option in &self.options {
            directive(out, option.as_bytes())?;
        }
        Ok(())
    }
}

/// ` WORD WORD ...`, each quoted.
fn words<'w>(out: &mut Vec<u8>, words: impl Iterator<Item = &'w OsStr>) {
    for word in words {
        out.push(b' ');
        out.extend(quote_bytes(word.as_bytes()));
    }
}

fn prefixed(prefix: &str, value: &OsStr) -> Vec<u8> {
    [prefix.as_bytes(), value.as_bytes()].concat()
}

/// One `#SBATCH "VALUE"` line.
fn directive(out: &mut Vec<u8>, value: &[u8]) -> Result<()> {
    if value.contains(&b'\n') {
        bail!(
            "sbatch option '{}' holds a newline; it cannot go into a batch script",
            String::from_utf8_lossy(value)
        );
    }
    out.extend_from_slice(b"#SBATCH \"");
    for &b in value {
        if b == b'\\' || b == b'"' {
            out.push(b'\\');
        }
        out.push(b);
    }
    out.extend_from_slice(b"\"\n");
    Ok(())
}

/// An `--output=DIR/NAME` line: `%` in DIR written `%%`; a DIR holding a backslash refused.
fn output_directive(out: &mut Vec<u8>, dir: &Path, name: &str) -> Result<()> {
    let bytes = dir.as_os_str().as_bytes();
    if bytes.contains(&b'\\') {
        bail!(
            "the output folder {} holds a backslash, which Slurm drops from output file names; \
             give a --scratch without one",
            dir.display()
        );
    }
    let mut value = b"--output=".to_vec();
    for &b in bytes {
        if b == b'%' {
            value.push(b'%');
        }
        value.push(b);
    }
    value.push(b'/');
    value.extend_from_slice(name.as_bytes());
    directive(out, &value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(value: &str) -> String {
        let mut out = Vec::new();
        directive(&mut out, value.as_bytes()).expect("no newline");
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn a_directive_holds_hashes_quotes_and_backslashes_as_given() {
        assert_eq!(line("--comment=#5 'q'"), "#SBATCH \"--comment=#5 'q'\"\n");
        assert_eq!(
            line(r#"--comment="d" a\b"#),
            r#"#SBATCH "--comment=\"d\" a\\b""#.to_owned() + "\n"
        );
        let err = directive(&mut Vec::new(), b"a\nb").expect_err("newline");
        assert!(err.to_string().contains("holds a newline"), "{err}");
    }

    #[test]
    fn an_output_folder_doubles_percent_and_refuses_a_backslash() {
        let mut out = Vec::new();
        output_directive(&mut out, Path::new("/s %j"), "finish-%j.out").expect("no backslash");
        assert_eq!(out, b"#SBATCH \"--output=/s %%j/finish-%j.out\"\n");
        let err =
            output_directive(&mut Vec::new(), Path::new("/a\\b"), "x").expect_err("backslash");
        assert!(err.to_string().contains("holds a backslash"), "{err}");
    }

    #[test]
    fn the_scripts_carry_every_word_whole() {
        let scratch = Scratch::new("/s x");
        let command = ["pytest".into(), "a b".into()];
        let batch = Batch {
            op: "mm",
            scratch: &scratch,
            cwd: Path::new("/w"),
            options: vec!["--partition=p".into()],
            spawn: Path::new("/bin dir/warmup-spawn"),
            script: Path::new("/scripts/warmup-slurm"),
            gpus_per_task: 0,
            time: None,
            spawn_argv: &["--timeout=30".into()],
            command: &command,
            record_dir: Some(Path::new("/r")),
        };
        let shard = String::from_utf8(batch.shard_script().expect("shard")).expect("utf-8");
        assert!(!shard.contains("--gres"), "{shard}");
        assert!(
            shard.ends_with(
                "exec '/bin dir/warmup-spawn' --plan '/s x/plan.json' --index-from-env \
             SLURM_ARRAY_TASK_ID --timeout=30 --summary \"$summary\" -- pytest 'a b'\n"
            ),
            "{shard}"
        );
        let finish = String::from_utf8(batch.finish_script().expect("finish")).expect("utf-8");
        assert!(
            finish.contains("#SBATCH \"--partition=p\"\nexport WARMUP_BIN_DIR='/bin dir'\n"),
            "{finish}"
        );
        assert!(
            finish.ends_with(
                "exec /scripts/warmup-slurm --finish --scratch '/s x' --op mm --record-dir /r\n"
            ),
            "{finish}"
        );
    }
}
