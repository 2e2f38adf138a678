//! One shard's child, resolved before anything runs: its argv (the caller's, with `--shape_file`
//! pointing at the shard, or as it is in by-key mode), its environment changes (recording into its own folder, marked as the
//! shard's) and its files. Built once per shard; `--dry-run` prints what the run starts.

use crate::sweep::process::Marker;
use protocol::backend::Backend;
use protocol::command::{shape_flags, Arg, SHAPE_FLAG};
use protocol::env;
use protocol::layout::Scratch;
use protocol::status::EnvChanges;
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

/// The settings every child of a run gets alike: how many run at once, whose Triton cache they
/// use, and (by-key mode) where they claim keys.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// Children running at once (`WARMUP_SPAWN_CHILDREN`): at most one per listed device.
    pub children: usize,
    /// A Triton cache per child (`SCRATCH/w<i>/.triton_cache`), the plugin's design, instead of
    /// the caller's `TRITON_CACHE_DIR`, which children inherit by default.
    pub cache_per_child: bool,
    /// By-key mode: the claim folder (`SCRATCH/claims`), the children's `WARMUP_HARNESS_CLAIM_DIR`.
    pub claims: Option<PathBuf>,
    /// `--fresh` or `--resume-dir`: the children's variable for it, and its value.
    pub resume: Option<(&'static str, String)>,
    /// The plan's op, each child's `FLAGGEMS_PERF_CURRENT_OP`: a child records under the op its
    /// shards and its run's merge are for, whatever the caller's environment says.
    pub op: String,
}

/// A shard's child, ready to start on any device.
#[derive(Debug, Clone)]
pub struct Job {
    pub shard: usize,
    /// The child's argv, program first.
    pub argv: Vec<OsString>,
    /// Every environment change but the device pin, which waits for a free device.
    env: EnvChanges,
    backend: &'static Backend,
    pub record_dir: PathBuf,
    pub log: PathBuf,
    pub status: PathBuf,
    /// Where its harness keeps its progress (`WARMUP_HARNESS_PROGRESS`), for the progress lines.
    pub progress: PathBuf,
    /// The seconds the op's history expects of this shard, when the plan's costs are seconds
    /// (`cost_source` `file`): the progress lines' ETA.
    pub expected_seconds: Option<f64>,
    /// false: the child keeps the caller's visibility variables as they are (a Slurm task that
    /// holds one device, `select`), and its device is only reported.
    pub pinned: bool,
}

impl Job {
    /// `scratch` must be absolute: children run in the caller's folder, not the scratch's.
    pub fn new(
        scratch: &Scratch,
        shard: usize,
        shape_file: Option<PathBuf>,
        command: &[OsString],
        backend: &'static Backend,
        marker: Marker,
        settings: RunSettings,
    ) -> Job {
        let path = |p: PathBuf| p.to_string_lossy().into_owned();
        let record_dir = scratch.record_dir(shard);
        let mut set = vec![
            (env::WARMUP_WORKER.to_owned(), "1".to_owned()),
            (env::RECORD_DIR.to_owned(), path(record_dir.clone())),
            (env::COLOR.to_owned(), "never".to_owned()),
            (env::CURRENT_OP.to_owned(), settings.op.clone()),
            // The log is a pipe: without this Python buffers it and a killed child's last words are lost.
            ("PYTHONUNBUFFERED".to_owned(), "1".to_owned()),
            // Inherited by all it starts, so that its processes are found wherever they go.
            (crate::sweep::process::MARKER.to_owned(), marker.to_string()),
            (
                env::SPAWN_CHILDREN.to_owned(),
                settings.children.to_string(),
            ),
        ];
        set.push((env::PROGRESS.to_owned(), path(scratch.progress(shard))));
        if let Some(claims) = &settings.claims {
            set.push((env::CLAIM_DIR.to_owned(), path(claims.clone())));
        }
        if let Some((name, value)) = &settings.resume {
            set.push(((*name).to_owned(), value.clone()));
        }
        if settings.cache_per_child {
            let cache = path(scratch.triton_cache(shard));
            set.insert(2, (env::TRITON_CACHE_DIR.to_owned(), cache));
        }
        let unset = [env::REPLAY_DIR, env::GPUS, env::TTGIR_DUMP_DIR].map(str::to_owned);
        Job {
            shard,
            // By-key (no shape file): COMMAND whole, as given.
            argv: match shape_file {
                Some(file) => child_argv(command, file.into_os_string()),
                None => command.to_vec(),
            },
            env: EnvChanges {
                set,
                unset: unset.into(),
            },
            backend,
            record_dir,
            log: scratch.log(shard),
            status: scratch.status(shard),
            progress: scratch.progress(shard),
            expected_seconds: None,
            pinned: true,
        }
    }

    /// The child's environment changes on `device`. Pinned: the backend's visibility variable
    /// set first and its others removed, then the rest. Not pinned: the rest alone, the
    /// visibility the child inherits left as it is.
    pub fn env_on(&self, device: &str) -> EnvChanges {
        if !self.pinned {
            return self.env.clone();
        }
        let vars = self.backend.vars;
        let mut set = vec![(vars[0].to_owned(), device.to_owned())];
        set.extend(self.env.set.iter().cloned());
        let mut unset: Vec<String> = vars[1..].iter().map(|v| (*v).to_owned()).collect();
        unset.extend(self.env.unset.iter().cloned());
        EnvChanges { set, unset }
    }
}

/// `command` (program first) without any `--shape_file X` or `--shape_file=X`, then
/// `--shape_file <shard file>`.
fn child_argv(command: &[OsString], shard_file: OsString) -> Vec<OsString> {
    let mut out = Vec::with_capacity(command.len() + 2);
    out.extend(command.first().cloned());
    out.extend(shape_flags(command).filter_map(|arg| match arg {
        Arg::Other(a) => Some(a.to_os_string()),
        Arg::ShapeFile(_) => None,
    }));
    out.push(SHAPE_FLAG.into());
    out.push(shard_file);
    out
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

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    const TWO_CHILDREN: RunSettings = RunSettings {
        children: 2,
        cache_per_child: false,
        claims: None,
        resume: None,
        op: String::new(),
    };

    fn job(command: &[&str], backend: &str) -> Job {
        job_with(command, backend, TWO_CHILDREN)
    }

    fn job_with(command: &[&str], backend: &str, settings: RunSettings) -> Job {
        let backend = protocol::backend::BACKENDS
            .iter()
            .find(|b| b.name == backend)
            .expect("backend");
        Job::new(
            &Scratch::new("/s"),
            1,
            Some("/s/w1/shapes.yaml".into()),
            &os(command),
            backend,
            Marker::new("r", 1),
            settings,
        )
    }

    /// Every spelling of the shape-file flag, and one that only looks like it.
    fn command() -> Vec<&'static str> {
        "pytest --shape_file a.yaml -k mm --shape_file=b.yaml --shape_filex --shape_file"
            .split(' ')
            .collect()
    }

    #[test]
    fn every_shape_file_flag_is_replaced_by_the_shard_file() {
        assert_eq!(
            job(&command(), "cuda").argv,
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
    fn a_by_key_child_runs_the_command_whole_and_claims_in_the_scratch() {
        let backend = protocol::backend::BACKENDS
            .iter()
            .find(|b| b.name == "cuda")
            .expect("backend");
        let settings = RunSettings {
            claims: Some("/s/claims".into()),
            ..TWO_CHILDREN
        };
        let job = Job::new(
            &Scratch::new("/s"),
            1,
            None,
            &os(&command()),
            backend,
            Marker::new("r", 1),
            settings,
        );
        assert_eq!(job.argv, os(&command()), "no shape file is replaced");
        let env = job.env_on("0");
        assert!(env
            .set
            .contains(&("WARMUP_HARNESS_CLAIM_DIR".into(), "/s/claims".into())));
        assert!(!job_with(&["pytest"], "cuda", TWO_CHILDREN)
            .env_on("0")
            .set
            .iter()
            .any(|(k, _)| k == "WARMUP_HARNESS_CLAIM_DIR"));
    }

    #[test]
    fn every_child_records_under_the_plans_op() {
        let settings = RunSettings {
            op: "mm".into(),
            ..TWO_CHILDREN
        };
        let env = job_with(&["pytest"], "cuda", settings).env_on("0");
        assert!(env
            .set
            .contains(&("FLAGGEMS_PERF_CURRENT_OP".into(), "mm".into())));
    }

    #[test]
    fn rocm_pins_hip_and_removes_rocr() {
        let env = job(&["pytest"], "rocm").env_on("GPU-1");
        assert_eq!(env.set[0], ("HIP_VISIBLE_DEVICES".into(), "GPU-1".into()));
        assert!(env.unset.contains(&"ROCR_VISIBLE_DEVICES".to_owned()));
        assert!(env.set.contains(&(
            "FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR".into(),
            "/s/w1/rec".into()
        )));
        assert!(env
            .set
            .contains(&("WARMUP_SPAWN_SHARD".into(), "r/1".into())));
    }

    #[test]
    fn an_unpinned_child_keeps_every_visibility_variable_it_inherits() {
        let mut job = job(&["pytest"], "rocm");
        job.pinned = false;
        let env = job.env_on("3");
        let names = env.set.iter().map(|(k, _)| k).chain(&env.unset);
        assert!(
            names.into_iter().all(|k| !k.ends_with("_VISIBLE_DEVICES")),
            "{env:?}"
        );
        assert!(env.set.contains(&(
            "FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR".into(),
            "/s/w1/rec".into()
        )));
        assert!(env
            .unset
            .contains(&"FLAGGEMS_PERF_AUTOTUNE_REPLAY_DIR".to_owned()));
    }

    #[test]
    fn children_keep_the_callers_triton_cache_unless_each_gets_its_own() {
        let cache_of = |env: EnvChanges| {
            env.set
                .into_iter()
                .find(|(name, _)| name == "TRITON_CACHE_DIR")
                .map(|(_, value)| value)
        };
        let shared = job(&["pytest"], "cuda").env_on("0");
        assert!(shared
            .set
            .contains(&("WARMUP_SPAWN_CHILDREN".into(), "2".into())));
        assert_eq!(cache_of(shared), None);
        let own = RunSettings {
            children: 3,
            cache_per_child: true,
            ..TWO_CHILDREN
        };
        let env = job_with(&["pytest"], "cuda", own).env_on("0");
        assert!(env
            .set
            .contains(&("WARMUP_SPAWN_CHILDREN".into(), "3".into())));
        assert_eq!(cache_of(env), Some("/s/w1/.triton_cache".into()));
    }
}
