//! What this run would be made on: the Triton version and the device model that a history
//! ([`crate::history`]) must match to be used; here because warmup-shard (`--history`) and
//! warmup-costs (`--predict`) both ask, with the same flags. A history made on another Triton or another GPU model times
//! other kernels, so its costs and figures say nothing of this run; what cannot be found is
//! unknown, and unknown matches nothing.
//!
//! - Triton: `--triton VERSION` from the caller, else the version `--python PYTHON` (the Python
//!   that runs the benchmark) has installed, read from its package metadata without starting it
//!   ([`crate::python`]); the harness records `triton.__version__`, which is that version.
//! - Device model: `--device-model NAME`, else the `Model:` of the NVIDIA driver's
//!   `/proc/driver/nvidia/gpus/*/information` (the name torch and nvidia-smi give, `NVIDIA H200`),
//!   for the listed devices: every GPU's when all GPUs there are one model, else the GPUs named
//!   by UUID in `--devices`; a list of indices over mixed models is unknown (CUDA's numbering need
//!   not follow the driver's). The hidden [`PROBE_ROOT`] prefixes the path (unset or empty: `/`),
//!   as for warmup-spawn's backend probe, so that tests can build a fake `/proc`.

use crate::env::PROBE_ROOT;
use std::path::{Path, PathBuf};

/// Where a run is made, as the command line gives or lets us find it.
#[derive(Debug, Clone, clap::Args)]
pub struct PlatformArgs {
    /// The Triton version this run uses [default: asked of --python; unknown without it]
    #[arg(long, value_name = "VERSION")]
    pub triton: Option<String>,
    /// The Python that runs the benchmark: its installed Triton's version, read from its package
    /// metadata (the interpreter is not started)
    #[arg(long, value_name = "PYTHON")]
    pub python: Option<PathBuf>,
    /// The GPU model this run uses, as torch names it [default: the NVIDIA driver's, from
    /// /proc/driver/nvidia/gpus]
    #[arg(long, value_name = "NAME")]
    pub device_model: Option<String>,
    /// The device tokens the sweep will use, comma-separated (`0,1`; `0,0` runs two children on
    /// one GPU)
    #[arg(long, value_name = "LIST", value_parser = crate::backend::list_arg)]
    pub devices: Option<String>,
}

/// The Triton version and device model of this run; `None` is unknown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Platform {
    pub triton: Option<String>,
    pub device: Option<String>,
}

impl PlatformArgs {
    /// The listed device tokens, by warmup-spawn's rule (`backend::parse_list`, which clap
    /// checked `--devices` by); none when `--devices` is not given.
    pub fn tokens(&self) -> Vec<String> {
        self.devices
            .as_deref()
            .and_then(|list| crate::backend::parse_list(list).ok())
            .unwrap_or_default()
    }

    /// Finds what the flags do not give.
    pub fn find(&self) -> Platform {
        let triton = clean(self.triton.clone()).or_else(|| {
            self.python
                .as_deref()
                .and_then(crate::python::triton_version)
        });
        let root = std::env::var_os(PROBE_ROOT)
            .filter(|r| !r.is_empty())
            .map_or_else(|| PathBuf::from("/"), PathBuf::from);
        let device = clean(self.device_model.clone())
            .or_else(|| device_model(&root.join("proc/driver/nvidia/gpus"), &self.tokens()));
        Platform { triton, device }
    }
}

pub fn clean(value: Option<String>) -> Option<String> {
    value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// The model of the listed devices from the driver's per-GPU `information` files in `gpus`.
pub fn device_model(gpus: &Path, tokens: &[String]) -> Option<String> {
    let mut found: Vec<(String, String)> = Vec::new(); // (uuid, model)
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(gpus)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    dirs.sort();
    for dir in dirs {
        let Ok(text) = std::fs::read_to_string(dir.join("information")) else {
            continue;
        };
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.trim().to_owned())
        };
        if let Some(model) = field("Model:").filter(|m| !m.is_empty()) {
            found.push((field("GPU UUID:").unwrap_or_default(), model));
        }
    }
    let first = found.first()?.1.clone();
    if found.iter().all(|(_, m)| *m == first) {
        return Some(first);
    }
    // Mixed models: only devices named by UUID can be told apart.
    let mut models = tokens.iter().map(|t| {
        found
            .iter()
            .find(|(uuid, _)| !uuid.is_empty() && uuid == t)
            .map(|(_, m)| m.clone())
    });
    let one = models.next()??;
    models
        .all(|m| m.as_deref() == Some(one.as_str()))
        .then_some(one)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(root: &Path, bus: &str, model: &str, uuid: &str) {
        let dir = root.join(bus);
        std::fs::create_dir_all(&dir).expect("mkdir");
        let text = format!("Model: \t\t {model}\nIRQ:   \t\t 41\nGPU UUID: \t {uuid}\n");
        std::fs::write(dir.join("information"), text).expect("write");
    }

    fn tokens(list: &[&str]) -> Vec<String> {
        list.iter().map(|t| (*t).to_owned()).collect()
    }

    #[test]
    fn one_model_everywhere_is_the_model() {
        let dir = tempfile::tempdir().expect("tempdir");
        gpu(dir.path(), "0000:00:06.0", "NVIDIA H200", "GPU-a");
        gpu(dir.path(), "0000:00:07.0", "NVIDIA H200", "GPU-b");
        let got = device_model(dir.path(), &tokens(&["0", "0"]));
        assert_eq!(got.as_deref(), Some("NVIDIA H200"));
    }

    #[test]
    fn mixed_models_are_known_only_for_devices_named_by_uuid() {
        let dir = tempfile::tempdir().expect("tempdir");
        gpu(dir.path(), "0000:00:06.0", "NVIDIA H200", "GPU-a");
        gpu(dir.path(), "0000:00:07.0", "NVIDIA A100", "GPU-b");
        let model = |list: &[&str]| device_model(dir.path(), &tokens(list));
        assert_eq!(model(&["GPU-b", "GPU-b"]).as_deref(), Some("NVIDIA A100"));
        assert_eq!(model(&["0", "1"]), None);
        assert_eq!(model(&["GPU-a", "GPU-b"]), None);
    }

    #[test]
    fn no_driver_is_unknown() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(device_model(&dir.path().join("gpus"), &[]), None);
    }
}
