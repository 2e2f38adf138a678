//! One shard's child, before it runs: its argv (the caller's, with `--shape_file` pointing at the
//! shard) and its environment changes (pinned to a device, recording into its own folder).

use crate::backend::Backend;
use crate::status::EnvChanges;
use protocol::env;
use protocol::layout::Scratch;
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

/// The flag the harness reads its shape file from.
pub const SHAPE_FLAG: &str = "--shape_file";

/// A shard's paths, all absolute.
#[derive(Debug, Clone)]
pub struct Job {
    pub shard: usize,
    pub shape_file: PathBuf,
    pub record_dir: PathBuf,
    pub triton_cache: PathBuf,
    pub log: PathBuf,
    pub status: PathBuf,
    /// false: the child keeps the caller's visibility variables as they are (a Slurm task that
    /// holds one GPU), and the device is only reported.
    pub pinned: bool,
}

impl Job {
    /// `scratch` must be absolute: children run in the caller's folder, not the scratch's.
    pub fn new(scratch: &Scratch, shard: usize, shape_file: PathBuf) -> Job {
        Job {
            shard,
            shape_file,
            record_dir: scratch.record_dir(shard),
            triton_cache: scratch.triton_cache(shard),
            log: scratch.log(shard),
            status: scratch.status(shard),
            pinned: true,
        }
    }

    /// The child's argv: `command` (program first) without any `--shape_file X` or
    /// `--shape_file=X`, then `--shape_file <shard file>`.
    pub fn argv(&self, command: &[OsString]) -> Vec<OsString> {
        let mut out = Vec::with_capacity(command.len() + 2);
        let mut args = command.iter();
        out.extend(args.next().cloned());
        while let Some(arg) = args.next() {
            if arg == SHAPE_FLAG {
                args.next();
                continue;
            }
            if arg
                .as_encoded_bytes()
                .starts_with(format!("{SHAPE_FLAG}=").as_bytes())
            {
                continue;
            }
            out.push(arg.clone());
        }
        out.push(SHAPE_FLAG.into());
        out.push(self.shape_file.clone().into_os_string());
        out
    }

    /// The child's environment changes when pinned to `device` on `backend`.
    pub fn env(&self, backend: &Backend, device: &str) -> EnvChanges {
        let path = |p: &PathBuf| p.to_string_lossy().into_owned();
        let mut set = vec![
            (env::WARMUP_WORKER.to_owned(), "1".to_owned()),
            (env::RECORD_DIR.to_owned(), path(&self.record_dir)),
            (env::TRITON_CACHE_DIR.to_owned(), path(&self.triton_cache)),
            (env::COLOR.to_owned(), "never".to_owned()),
            // The log is a file: without this Python buffers it and a killed child's last words are lost.
            ("PYTHONUNBUFFERED".to_owned(), "1".to_owned()),
        ];
        let mut unset: Vec<String> = Vec::new();
        if self.pinned {
            set.insert(0, (backend.vars[0].to_owned(), device.to_owned()));
            unset.extend(backend.vars[1..].iter().map(|v| (*v).to_owned()));
        }
        unset.extend([env::REPLAY_DIR, env::GPUS, env::TTGIR_DUMP_DIR].map(str::to_owned));
        EnvChanges { set, unset }
    }
}

/// `argv` as strings for status.json and messages (lossy for non-UTF-8 bytes).
pub fn lossy(argv: &[OsString]) -> Vec<String> {
    argv.iter()
        .map(|a| OsStr::to_string_lossy(a).into_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> Job {
        Job::new(&Scratch::new("/s"), 1, "/s/w1/shapes.yaml".into())
    }

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn every_shape_file_flag_is_replaced_by_the_shard_file() {
        let argv = job().argv(&os(&[
            "pytest",
            "--shape_file",
            "a.yaml",
            "-k",
            "mm",
            "--shape_file=b.yaml",
            "--shape_filex",
            "--shape_file",
        ]));
        assert_eq!(
            argv,
            os(&[
                "pytest",
                "-k",
                "mm",
                "--shape_filex",
                "--shape_file",
                "/s/w1/shapes.yaml"
            ])
        );
    }

    #[test]
    fn rocm_pins_hip_and_removes_rocr() {
        let b = crate::backend::BACKENDS
            .iter()
            .find(|b| b.name == "rocm")
            .expect("rocm");
        let env = job().env(b, "GPU-1");
        assert_eq!(env.set[0], ("HIP_VISIBLE_DEVICES".into(), "GPU-1".into()));
        assert!(env.unset.contains(&"ROCR_VISIBLE_DEVICES".to_owned()));
        assert!(env.set.contains(&(
            "FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR".into(),
            "/s/w1/rec".into()
        )));
    }
}
