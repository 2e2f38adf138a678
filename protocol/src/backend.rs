//! Which accelerator runtime the children run on: its visibility variables, how its devices are
//! counted, and the device tokens a run may pin children to.
//!
//! One row per backend in [`BACKENDS`]. Probes read files under `/proc`, `/sys` and `/dev`, all
//! prefixed by the hidden `WARMUP_PROBE_ROOT` variable (unset: `/`) so that tests can build a
//! fake tree; `nvidia-smi` is found through `PATH` like any other command. Here because two tools
//! list the devices the same way: warmup-spawn (`--list-devices`, and the devices a run pins
//! children to) and warmup-plan (how many devices a run has, before anything starts).

use crate::env::PROBE_ROOT;
use anyhow::{bail, Context, Result};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// How a backend's devices are counted when no visibility list says which to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// One folder per GPU in `/proc/driver/nvidia/gpus`, else the `GPU n:` lines of `nvidia-smi -L`.
    Nvidia,
    /// ROCm's KFD topology: the nodes under `/sys/class/kfd/kfd/topology/nodes` with a non-zero
    /// `simd_count` are GPUs (CPU nodes have none); this is what rocm-smi and the HIP runtime count.
    Kfd,
    /// Character devices `/dev/<prefix><n>` (n a number): one per card.
    DevNodes(&'static str),
    /// No documented way to count: the caller must pass `--devices` or set the variable.
    Unknown,
}

/// One accelerator runtime.
#[derive(Debug, PartialEq, Eq)]
pub struct Backend {
    /// The name `--backend` takes.
    pub name: &'static str,
    /// FlagGems vendor names (`FLAGGEMS_VENDOR`) that run on this backend.
    pub vendors: &'static [&'static str],
    /// Visibility variables, the one a child is pinned with first; the others are removed in a child.
    pub vars: &'static [&'static str],
    pub probe: Probe,
}

/// Every backend, in the order `--backend auto` tries their variables and probes.
pub const BACKENDS: &[Backend] = &[
    Backend {
        name: "cuda",
        vendors: &["nvidia"],
        vars: &["CUDA_VISIBLE_DEVICES"],
        probe: Probe::Nvidia,
    },
    Backend {
        name: "rocm",
        vendors: &["amd", "hygon"],
        vars: &["HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"],
        probe: Probe::Kfd,
    },
    Backend {
        name: "ascend",
        vendors: &["ascend", "huawei"],
        vars: &["ASCEND_RT_VISIBLE_DEVICES"],
        // The Ascend driver makes /dev/davinci<n> per NPU (plus davinci_manager, not a card).
        probe: Probe::DevNodes("davinci"),
    },
    Backend {
        name: "cambricon",
        vendors: &["cambricon"],
        vars: &["MLU_VISIBLE_DEVICES"],
        // The Cambricon driver makes /dev/cambricon_dev<n> per MLU (plus cambricon_ctl).
        probe: Probe::DevNodes("cambricon_dev"),
    },
    Backend {
        name: "mthreads",
        vendors: &["mthreads"],
        vars: &["MUSA_VISIBLE_DEVICES"],
        probe: Probe::Unknown,
    },
    Backend {
        name: "metax",
        vendors: &["metax"],
        vars: &["MACA_VISIBLE_DEVICES"],
        probe: Probe::Unknown,
    },
    Backend {
        name: "kunlunxin",
        vendors: &["kunlunxin"],
        vars: &["XPU_VISIBLE_DEVICES"],
        // Kunlunxin's device plugin documents /dev/xpu<n> per XPU (plus xpuctrl).
        probe: Probe::DevNodes("xpu"),
    },
    Backend {
        name: "enflame",
        vendors: &["enflame"],
        vars: &["TOPS_VISIBLE_DEVICES"],
        probe: Probe::Unknown,
    },
    Backend {
        name: "iluvatar",
        vendors: &["iluvatar"],
        vars: &["CUDA_VISIBLE_DEVICES"],
        probe: Probe::Unknown,
    },
];

/// What the caller's environment says; a trait-free snapshot so that tests pass their own.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    /// Every variable, as the OS holds it: a path need not be UTF-8.
    vars: Vec<(OsString, OsString)>,
    probe_root: PathBuf,
}

impl Environment {
    /// This process's environment.
    pub fn current() -> Self {
        let vars = std::env::vars_os().collect();
        let probe_root = std::env::var_os(PROBE_ROOT)
            .filter(|r| !r.is_empty())
            .map_or_else(|| PathBuf::from("/"), PathBuf::from);
        Environment { vars, probe_root }
    }

    /// A given environment: `vars` as the caller's, `probe_root` for the probes' files (tests,
    /// and a caller that builds the snapshot once for several uses).
    pub fn fake(vars: &[(&str, &str)], probe_root: &Path) -> Self {
        Self::fake_os(
            &vars
                .iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v)))
                .collect::<Vec<_>>(),
            probe_root,
        )
    }

    /// [`Environment::fake`] with values that need not be UTF-8.
    pub fn fake_os(vars: &[(OsString, OsString)], probe_root: &Path) -> Self {
        Environment {
            vars: vars.to_vec(),
            probe_root: probe_root.to_path_buf(),
        }
    }

    /// The variable `key`, when it is set to UTF-8 text (a list, a name, a number).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.get_os(key).and_then(OsStr::to_str)
    }

    /// The variable `key` as the OS holds it, when it is set: a path, which need not be UTF-8.
    pub fn get_os(&self, key: &str) -> Option<&OsStr> {
        self.vars
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_os_str())
    }

    /// `path` (absolute, e.g. `/proc/driver/nvidia/gpus`) under the probe root.
    pub fn root(&self, path: &str) -> PathBuf {
        self.probe_root.join(path.trim_start_matches('/'))
    }
}

/// The backend `--backend NAME` names: a backend name, a FlagGems vendor name, or `auto`.
pub fn select(name: &str, env: &Environment) -> Result<&'static Backend> {
    select_for(name, env, false)
}

/// [`select`] for a run given `--devices` or not: where auto finds no backend, the message asks
/// only for what is missing (`--backend NAME`, and `--devices LIST` when none was given).
pub fn select_for(name: &str, env: &Environment, devices_given: bool) -> Result<&'static Backend> {
    let name = name.trim();
    if name != "auto" {
        return by_name(name).with_context(|| format!("--backend {name:?}: {}", known()));
    }
    if let Some(vendor) = env.get(crate::env::VENDOR).map(str::trim) {
        if !vendor.is_empty() {
            return by_name(vendor).with_context(|| {
                format!(
                    "{}={vendor:?} names no backend this tool knows: {}; or pass --backend",
                    crate::env::VENDOR,
                    known()
                )
            });
        }
    }
    if let Some(b) = BACKENDS
        .iter()
        .find(|b| b.vars.iter().any(|v| env.get(v).is_some()))
    {
        return Ok(b);
    }
    for b in BACKENDS {
        if matches!(probe(b, env), Ok(n) if n > 0) {
            return Ok(b);
        }
    }
    bail!(
        "--backend auto found no backend: {} is unset, no visibility variable ({}) is set, \
         and no probe found a device; pass --backend NAME{}",
        crate::env::VENDOR,
        all_vars().join(", "),
        if devices_given {
            ""
        } else {
            " and --devices LIST"
        }
    )
}

fn by_name(name: &str) -> Option<&'static Backend> {
    let lower = name.to_ascii_lowercase();
    BACKENDS
        .iter()
        .find(|b| b.name == lower || b.vendors.contains(&lower.as_str()))
}

fn known() -> String {
    let names: Vec<_> = BACKENDS.iter().map(|b| b.name).collect();
    format!("known backends are auto, {}", names.join(", "))
}

fn all_vars() -> Vec<&'static str> {
    let mut vars: Vec<&str> = Vec::new();
    for v in BACKENDS.iter().flat_map(|b| b.vars) {
        if !vars.contains(v) {
            vars.push(v);
        }
    }
    vars
}

/// Parses `--devices LIST`: comma-separated tokens, trimmed, none empty, each one word (no
/// whitespace or control character inside), passed on as written.
pub fn parse_list(list: &str) -> Result<Vec<String>> {
    let tokens: Vec<String> = list.split(',').map(|t| t.trim().to_owned()).collect();
    if let Some(pos) = tokens.iter().position(String::is_empty) {
        bail!(
            "--devices {list:?}: device {} is empty; list device tokens separated by commas, e.g. --devices 0,1",
            pos + 1
        );
    }
    check_tokens(&tokens, &format!("--devices {list:?}"))?;
    Ok(tokens)
}

/// `--devices LIST` as clap's `value_parser` (warmup-plan's drivers, `--devices` of
/// warmup-shard and warmup-costs): [`parse_list`]'s rule, the text kept as given.
pub fn list_arg(text: &str) -> std::result::Result<String, String> {
    parse_list(text)
        .map(|_| text.to_owned())
        .map_err(|e| format!("{e:#}"))
}

/// A device token is one word (an index, a UUID, a MIG id): it becomes a child's whole
/// visibility variable, where a space or a newline would be read as something else.
fn check_tokens(tokens: &[String], source: &str) -> Result<()> {
    for (i, token) in tokens.iter().enumerate() {
        if let Some(c) = token.chars().find(|c| c.is_whitespace() || c.is_control()) {
            bail!(
                "{source}: device {} ({token:?}) holds {c:?}; a device token is one word (an index, a UUID or a MIG id), e.g. --devices 0,1",
                i + 1
            );
        }
    }
    Ok(())
}

/// The device tokens to pin children to: `--devices`, else the caller's visibility list for this
/// backend (sliced as written, never renumbered), else `0..n-1` for the n devices probed.
///
/// A visibility list is read as the runtime reads it: empty tokens are skipped, and a negative
/// index ends the list (CUDA's rule: `-1` hides every device, `0,1,-1,2` shows 0 and 1); its
/// tokens are held to [`parse_list`]'s one-word rule.
pub fn devices(backend: &Backend, flag: Option<&str>, env: &Environment) -> Result<Vec<String>> {
    if let Some(list) = flag {
        return parse_list(list);
    }
    let mut blank = None;
    for var in backend.vars {
        match env.get(var) {
            Some(raw) if !raw.trim().is_empty() => return visible(var, raw),
            Some(_) => blank = blank.or(Some(*var)),
            None => {}
        }
    }
    // A blank list hides every device from the runtime; probing would hand children the devices
    // the caller meant to hide.
    if let Some(var) = blank {
        bail!("{var} is set but empty, which hides every device; unset it, list devices in it, or pass --devices");
    }
    let n = probe(backend, env)?;
    if n == 0 {
        bail!(
            "no devices found: backend {} probed {}; pass --devices LIST or set {}",
            backend.name,
            probe_source(backend.probe),
            backend.vars[0]
        );
    }
    Ok((0..n).map(|i| i.to_string()).collect())
}

/// The devices a set visibility variable `var` shows.
fn visible(var: &str, raw: &str) -> Result<Vec<String>> {
    let tokens: Vec<String> = raw
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect();
    check_tokens(&tokens, &format!("{var}={raw:?}"))?;
    let negative = |t: &str| {
        t.strip_prefix('-')
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    let shown: Vec<String> = tokens.into_iter().take_while(|t| !negative(t)).collect();
    if shown.is_empty() {
        bail!(
            "{var}={raw:?} hides every device: a negative index ends the list, so none is visible; \
             unset it, list devices in it, or pass --devices"
        );
    }
    Ok(shown)
}

fn probe_source(probe: Probe) -> String {
    match probe {
        Probe::Nvidia => "/proc/driver/nvidia/gpus and nvidia-smi -L".into(),
        Probe::Kfd => "/sys/class/kfd/kfd/topology/nodes".into(),
        Probe::DevNodes(prefix) => format!("/dev/{prefix}N"),
        Probe::Unknown => "nothing".into(),
    }
}

/// How many devices the backend's probe finds.
pub fn probe(backend: &Backend, env: &Environment) -> Result<usize> {
    match backend.probe {
        Probe::Nvidia => {
            let n = count_entries(&env.root("/proc/driver/nvidia/gpus"), |_| true);
            Ok(if n > 0 { n } else { nvidia_smi() })
        }
        Probe::Kfd => Ok(kfd_gpus(&env.root("/sys/class/kfd/kfd/topology/nodes"))),
        Probe::DevNodes(prefix) => Ok(count_entries(&env.root("/dev"), |name| {
            name.strip_prefix(prefix)
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })),
        Probe::Unknown => bail!(
            "backend {} has no documented way to count its devices; pass --devices LIST or set {}",
            backend.name,
            backend.vars[0]
        ),
    }
}

fn count_entries(dir: &Path, keep: impl Fn(&str) -> bool) -> usize {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_str().is_some_and(&keep))
            .count()
    })
}

fn kfd_gpus(nodes: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(nodes) else {
        return 0;
    };
    entries
        .filter_map(|e| e.ok())
        .filter(|e| {
            std::fs::read_to_string(e.path().join("properties")).is_ok_and(|props| {
                props.lines().any(|line| {
                    let mut words = line.split_whitespace();
                    words.next() == Some("simd_count")
                        && words.next().and_then(|n| n.parse::<u64>().ok()) > Some(0)
                })
            })
        })
        .count()
}

fn nvidia_smi() -> usize {
    std::process::Command::new("nvidia-smi")
        .arg("-L")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map_or(0, |out| {
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter(|l| l.starts_with("GPU "))
                .count()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none() -> PathBuf {
        PathBuf::from("/nonexistent-probe-root")
    }

    #[test]
    fn vendor_names_map_to_backends() {
        let env = Environment::fake(&[("FLAGGEMS_VENDOR", "hygon")], &none());
        assert_eq!(select("auto", &env).expect("hygon").name, "rocm");
        let env = Environment::fake(&[("FLAGGEMS_VENDOR", "nvidia")], &none());
        assert_eq!(select("auto", &env).expect("nvidia").name, "cuda");
        assert_eq!(select("Ascend", &env).expect("by name").name, "ascend");
    }

    #[test]
    fn an_unknown_vendor_is_refused_with_the_known_names() {
        let env = Environment::fake(&[("FLAGGEMS_VENDOR", "acme")], &none());
        let err = format!("{:#}", select("auto", &env).expect_err("acme"));
        assert!(err.contains("acme") && err.contains("cambricon"), "{err}");
    }

    #[test]
    fn auto_finding_nothing_asks_only_for_what_is_missing() {
        let env = Environment::fake(&[], &none());
        let bare = format!("{:#}", select_for("auto", &env, false).expect_err("none"));
        assert!(
            bare.ends_with("pass --backend NAME and --devices LIST"),
            "{bare}"
        );
        let given = format!("{:#}", select_for("auto", &env, true).expect_err("none"));
        assert!(given.ends_with("pass --backend NAME"), "{given}");
    }

    #[test]
    fn auto_follows_the_visibility_variable_the_caller_set() {
        let env = Environment::fake(&[("MLU_VISIBLE_DEVICES", "3")], &none());
        assert_eq!(select("auto", &env).expect("mlu").name, "cambricon");
        let env = Environment::fake(&[("ROCR_VISIBLE_DEVICES", "1")], &none());
        assert_eq!(select("auto", &env).expect("rocr").name, "rocm");
    }

    #[test]
    fn caller_list_is_sliced_as_written() {
        let b = by_name("cuda").expect("cuda");
        let env = Environment::fake(
            &[("CUDA_VISIBLE_DEVICES", " GPU-8f2a , MIG-1c3d/1/0,5 ")],
            &none(),
        );
        assert_eq!(
            devices(b, None, &env).expect("list"),
            ["GPU-8f2a", "MIG-1c3d/1/0", "5"]
        );
    }

    #[test]
    fn empty_token_in_devices_flag_is_refused_with_its_position() {
        let err = format!("{:#}", parse_list("0,,1").expect_err("empty"));
        assert!(err.contains("device 2 is empty"), "{err}");
        assert_eq!(parse_list("0, 0,1").expect("ok"), ["0", "0", "1"]);
    }

    #[test]
    fn a_device_token_is_one_word_whether_given_or_inherited() {
        for list in ["a b,c", "0\n1", "0,1\t2"] {
            let err = format!("{:#}", parse_list(list).expect_err(list));
            assert!(err.contains("a device token is one word"), "{err}");
        }
        let err = format!("{:#}", parse_list("0,a b").expect_err("space"));
        assert!(err.contains("device 2 (\"a b\") holds ' '"), "{err}");
        let b = by_name("cuda").expect("cuda");
        let env = Environment::fake(&[("CUDA_VISIBLE_DEVICES", "0\n1")], &none());
        let err = format!("{:#}", devices(b, None, &env).expect_err("newline"));
        assert!(
            err.contains("CUDA_VISIBLE_DEVICES=\"0\\n1\": device 1"),
            "{err}"
        );
        assert_eq!(list_arg("0, 1"), Ok("0, 1".to_owned()));
        assert!(list_arg("a b").is_err());
    }

    #[test]
    fn a_negative_index_ends_a_visibility_list_and_minus_one_shows_none() {
        let b = by_name("cuda").expect("cuda");
        let list = |raw: &str| {
            devices(
                b,
                None,
                &Environment::fake(&[("CUDA_VISIBLE_DEVICES", raw)], &none()),
            )
        };
        assert_eq!(list("0,1,-1,2").expect("two"), ["0", "1"]);
        assert_eq!(list("0,,1,").expect("empties skipped"), ["0", "1"]);
        let err = format!("{:#}", list("-1").expect_err("none"));
        assert!(
            err.contains("CUDA_VISIBLE_DEVICES=\"-1\" hides every device")
                && err.contains("so none is visible"),
            "{err}"
        );
        // --devices is the caller's own list: taken as written.
        assert_eq!(
            devices(b, Some("-1"), &Environment::default()).expect("flag"),
            ["-1"]
        );
    }

    #[test]
    fn a_blank_visibility_variable_hides_every_device() {
        let b = by_name("cuda").expect("cuda");
        let env = Environment::fake(&[("CUDA_VISIBLE_DEVICES", " ")], &none());
        let err = format!("{:#}", devices(b, None, &env).expect_err("blank"));
        assert!(
            err.contains("CUDA_VISIBLE_DEVICES is set but empty"),
            "{err}"
        );
    }

    #[test]
    fn probes_count_devices_on_a_fake_tree() {
        let root = tempfile::tempdir().expect("tempdir");
        let r = root.path();
        for gpu in ["0000:01:00.0", "0000:02:00.0"] {
            std::fs::create_dir_all(r.join("proc/driver/nvidia/gpus").join(gpu)).expect("mkdir");
        }
        std::fs::create_dir_all(r.join("dev")).expect("mkdir");
        for node in [
            "davinci0",
            "davinci1",
            "davinci7",
            "davinci_manager",
            "xpu0",
            "xpuctrl",
        ] {
            std::fs::write(r.join("dev").join(node), "").expect("node");
        }
        for (node, simd) in [("0", 0), ("1", 104), ("2", 104), ("3", 104)] {
            let dir = r.join("sys/class/kfd/kfd/topology/nodes").join(node);
            std::fs::create_dir_all(&dir).expect("mkdir");
            std::fs::write(
                dir.join("properties"),
                format!("cpu_cores_count 0\nsimd_count {simd}\n"),
            )
            .expect("props");
        }
        let env = Environment::fake(&[], r);
        let count = |name| probe(by_name(name).expect("backend"), &env).expect("probe");
        assert_eq!(count("cuda"), 2);
        assert_eq!(count("ascend"), 3);
        assert_eq!(count("kunlunxin"), 1);
        assert_eq!(count("rocm"), 3);
        assert_eq!(count("cambricon"), 0);
        assert_eq!(
            devices(by_name("ascend").expect("ascend"), None, &env).expect("devs"),
            ["0", "1", "2"]
        );
    }

    #[test]
    fn a_backend_without_a_probe_says_to_pass_devices() {
        let env = Environment::fake(&[], &none());
        let err = format!(
            "{:#}",
            devices(by_name("metax").expect("metax"), None, &env).expect_err("unknown")
        );
        assert!(
            err.contains("--devices") && err.contains("MACA_VISIBLE_DEVICES"),
            "{err}"
        );
    }
}
