//! What this run would be made on: the Triton version and the device model that a history
//! ([`crate::history`]) must match to be used; here because warmup-shard (`--history`) and
//! warmup-costs (`--predict`) both ask, with the same flags. A history made on another Triton or another GPU model times
//! other kernels, so its costs and figures say nothing of this run; what cannot be found is
//! unknown, and unknown matches nothing.
//!
//! - Triton: `--triton VERSION` from the caller, else the version `--python PYTHON` (the Python
//!   that runs the benchmark) has installed, read from its package metadata without starting it
//!   ([`crate::python`]); the harness records `triton.__version__`, which is that version.
//! - Device model: `--device-model NAME`, else [`device_name`]: the NVIDIA driver's files (the
//!   name torch and nvidia-smi give, `NVIDIA H200`), else AMD's sysfs and KFD topology, else any
//!   PCI GPU's ids, for every vendor FlagGems runs on and without an interpreter; the harness
//!   names its device by the same rules (`warmup_harness.autotune.device`), so that a record it
//!   made is one this side can tell is this device's. [`PROBE_ROOT`] prefixes the paths (unset or
//!   empty: `/`), as for warmup-spawn's backend probe, so that tests can build a fake `/proc` and
//!   `/sys`. Where no rule names the device, [`machine`] names this machine, so that the record
//!   cache gives it a folder of its own (`crate::cache_dir::slug`).

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
    /// The GPU model this run uses, as the sidecar names it [default: from the NVIDIA driver's
    /// files, else AMD's sysfs and KFD topology, else the PCI ids]
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
        let device =
            clean(self.device_model.clone()).or_else(|| device_name(&root(), &self.tokens()));
        Platform { triton, device }
    }
}

/// Where devices are probed: [`PROBE_ROOT`] when set and not empty, else `/`.
pub fn root() -> PathBuf {
    std::env::var_os(PROBE_ROOT)
        .filter(|r| !r.is_empty())
        .map_or_else(|| PathBuf::from("/"), PathBuf::from)
}

pub fn clean(value: Option<String>) -> Option<String> {
    value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// The name of the listed devices' model under `root` (`/`, or [`PROBE_ROOT`] in tests), the
/// first rule that gives one, as the harness names them (`warmup_harness.autotune.device`):
///
/// 1. NVIDIA: the driver's `proc/driver/nvidia/gpus/*/information` ([`device_model`]);
/// 2. AMD: `sys/class/drm/card<N>/device/product_name` of every card whose `vendor` is `0x1002`,
///    else `AMD <name>` from the KFD topology, `sys/class/kfd/kfd/topology/nodes/*/name` of every
///    node whose `properties` give a `simd_count` above 0 (a GPU: `AMD gfx942`);
/// 3. any PCI GPU: `PCI <vendor>:<device>` (`PCI 1da3:1020`, the ids of
///    `sys/bus/pci/devices/*/{vendor,device}`) of every device whose `class` is a display
///    controller (`0x03xxxx`) or a processing accelerator (`0x12xxxx`), VGA controllers
///    (`0x0300xx`, a server's management console) left out where there are others.
///
/// Each rule names the devices only when they are all one model (NVIDIA's: or the listed UUIDs
/// are); else, or where nothing is found, the name is unknown.
pub fn device_name(root: &Path, tokens: &[String]) -> Option<String> {
    device_model(&root.join("proc/driver/nvidia/gpus"), tokens)
        .or_else(|| amd_name(root))
        .or_else(|| pci_name(root))
}

/// A small sysfs file's text, trimmed; `None` when it cannot be read or is blank.
fn sysfs(path: &Path) -> Option<String> {
    let bytes = toolkit::file::read_at_most(path, 1 << 16).ok()?;
    let text = String::from_utf8_lossy(&bytes).trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// The entries of `dir`, sorted by name; none when it cannot be read.
fn entries(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut found: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .map(|it| {
            it.filter_map(Result::ok)
                .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// The one value of `names`, when there is at least one and they are all the same.
fn one(names: Vec<Option<String>>) -> Option<String> {
    let first = names.first()?.clone()?;
    names
        .iter()
        .all(|n| n.as_deref() == Some(first.as_str()))
        .then_some(first)
}

fn amd_name(root: &Path) -> Option<String> {
    let cards: Vec<PathBuf> = entries(&root.join("sys/class/drm"))
        .into_iter()
        .filter(|(name, _)| {
            name.strip_prefix("card")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(|(_, path)| path.join("device"))
        .filter(|dev| sysfs(&dev.join("vendor")).as_deref() == Some("0x1002"))
        .collect();
    let products = cards.iter().map(|d| sysfs(&d.join("product_name")));
    if let Some(name) = one(products.collect()) {
        return Some(name);
    }
    let gpus: Vec<Option<String>> = entries(&root.join("sys/class/kfd/kfd/topology/nodes"))
        .into_iter()
        .filter(|(_, node)| {
            sysfs(&node.join("properties")).is_some_and(|p| {
                p.lines().any(|l| {
                    let mut words = l.split_whitespace();
                    words.next() == Some("simd_count")
                        && words.next().and_then(|n| n.parse::<u64>().ok()) > Some(0)
                })
            })
        })
        .map(|(_, node)| sysfs(&node.join("name")).map(|n| format!("AMD {n}")))
        .collect();
    one(gpus)
}

/// Every PCI GPU or accelerator under `root`: `(class, "PCI <vendor>:<device>")`, the class
/// `0x03xxxx` (display) or `0x12xxxx` (processing accelerator), lowercase hex without `0x`;
/// the name `None` where its ids cannot be read.
fn pci_gpus(root: &Path) -> Vec<(String, Option<String>)> {
    let hex = |text: String| {
        let digits = text
            .strip_prefix("0x")
            .unwrap_or(&text)
            .to_ascii_lowercase();
        (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_hexdigit())).then_some(digits)
    };
    let mut found = Vec::new();
    for (_, dev) in entries(&root.join("sys/bus/pci/devices")) {
        let Some(class) = sysfs(&dev.join("class")).and_then(hex) else {
            continue;
        };
        if !(class.len() == 6 && (class.starts_with("03") || class.starts_with("12"))) {
            continue;
        }
        let ids = sysfs(&dev.join("vendor"))
            .and_then(hex)
            .zip(sysfs(&dev.join("device")).and_then(hex));
        found.push((class, ids.map(|(v, d)| format!("PCI {v}:{d}"))));
    }
    found
}

fn pci_name(root: &Path) -> Option<String> {
    let mut found = pci_gpus(root);
    if found.iter().any(|(class, _)| !class.starts_with("0300")) {
        found.retain(|(class, _)| !class.starts_with("0300"));
    }
    one(found.into_iter().map(|(_, name)| name).collect())
}

/// This machine, for a device no rule of [`device_name`] names (the record cache gives it a
/// folder of its own: `crate::cache_dir`): 12 hex digits of FNV-1a 64 over the machine id
/// (`etc/machine-id`, else `var/lib/dbus/machine-id`), else the host name
/// (`proc/sys/kernel/hostname`, else `etc/hostname`), and the sorted ids of every PCI GPU and
/// accelerator. Stable while the machine keeps its id and its cards; a container without a
/// machine id is its host name's (Docker: the container's, new at each start unless given).
pub fn machine(root: &Path) -> String {
    let id = [
        "etc/machine-id",
        "var/lib/dbus/machine-id",
        "proc/sys/kernel/hostname",
        "etc/hostname",
    ]
    .iter()
    .find_map(|file| sysfs(&root.join(file)))
    .unwrap_or_default();
    let mut cards: Vec<String> = pci_gpus(root).into_iter().filter_map(|(_, n)| n).collect();
    cards.sort();
    let hash = fnv1a64(
        id.bytes()
            .chain(cards.iter().flat_map(|c| [0].into_iter().chain(c.bytes()))),
    );
    format!("{:012x}", hash >> 16)
}

/// The 64-bit FNV-1a hash of `bytes`: the machine's id here, and the record cache's folder names
/// (cache_dir.rs), whose 48 high bits name them.
pub(crate) fn fnv1a64(bytes: impl IntoIterator<Item = u8>) -> u64 {
    bytes.into_iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
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
        let Ok(text) = toolkit::file::read_to_string(&dir.join("information")) else {
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

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/data/sysfs")
            .join(name)
    }

    #[test]
    fn an_amd_host_is_named_by_its_cards_product_else_by_its_kfd_gpus() {
        assert_eq!(
            device_name(&fixture("amd"), &[]).as_deref(),
            Some("AMD Instinct MI300X")
        );
        // Without product names: the KFD topology's GPU nodes (the CPU node has no SIMDs).
        let dir = tempfile::tempdir().expect("tempdir");
        for (node, simds, name) in [("0", 0, ""), ("1", 304, "gfx90a"), ("2", 304, "gfx90a")] {
            let at = dir
                .path()
                .join("sys/class/kfd/kfd/topology/nodes")
                .join(node);
            std::fs::create_dir_all(&at).expect("mkdir");
            std::fs::write(at.join("properties"), format!("simd_count {simds}\n")).expect("write");
            std::fs::write(at.join("name"), format!("{name}\n")).expect("write");
        }
        assert_eq!(device_name(dir.path(), &[]).as_deref(), Some("AMD gfx90a"));
    }

    #[test]
    fn any_pci_gpu_is_named_by_its_ids_and_a_vga_console_beside_it_is_not_counted() {
        assert_eq!(
            device_name(&fixture("pci"), &[]).as_deref(),
            Some("PCI 1da3:1020")
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let pci = |bus: &str, class: &str, vendor: &str, device: &str| {
            let at = dir.path().join("sys/bus/pci/devices").join(bus);
            std::fs::create_dir_all(&at).expect("mkdir");
            for (file, text) in [("class", class), ("vendor", vendor), ("device", device)] {
                std::fs::write(at.join(file), format!("{text}\n")).expect("write");
            }
        };
        pci("0000:01:00.0", "0x030000", "0x1a03", "0x2000");
        assert_eq!(
            device_name(dir.path(), &[]).as_deref(),
            Some("PCI 1a03:2000"),
            "a VGA controller alone is the GPU"
        );
        pci("0000:17:00.0", "0x030200", "0x10de", "0x2335");
        pci("0000:18:00.0", "0x030200", "0x10de", "0x2330");
        assert_eq!(device_name(dir.path(), &[]), None, "two models");
    }

    #[test]
    fn a_machine_is_its_id_else_its_host_name_and_its_cards() {
        let dir = tempfile::tempdir().expect("tempdir");
        let write = |file: &str, text: &str| {
            let at = dir.path().join(file);
            std::fs::create_dir_all(at.parent().expect("parent")).expect("mkdir");
            std::fs::write(at, text).expect("write");
        };
        write("proc/sys/kernel/hostname", "node-1\n");
        let by_host = machine(dir.path());
        assert_eq!(by_host.len(), 12, "{by_host}");
        write("proc/sys/kernel/hostname", "node-2\n");
        assert_ne!(machine(dir.path()), by_host, "another host");
        write("etc/machine-id", "0123abcd\n");
        let by_id = machine(dir.path());
        write("proc/sys/kernel/hostname", "node-3\n");
        assert_eq!(
            machine(dir.path()),
            by_id,
            "the machine id wins over the host name"
        );
        // Two models of card (which name no device): the same machine id with other cards is
        // another machine.
        let cards = dir.path().join("sys/bus/pci/devices");
        for (bus, device) in [("0000:17:00.0", "0x2335"), ("0000:18:00.0", "0x20b0")] {
            let at = cards.join(bus);
            std::fs::create_dir_all(&at).expect("mkdir");
            for (file, text) in [
                ("class", "0x030200"),
                ("vendor", "0x10de"),
                ("device", device),
            ] {
                std::fs::write(at.join(file), text).expect("write");
            }
        }
        assert_eq!(device_name(dir.path(), &[]), None);
        let with_cards = machine(dir.path());
        assert_ne!(with_cards, by_id);
        assert_eq!(machine(dir.path()), with_cards, "stable");
    }

    #[test]
    fn no_driver_is_unknown() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(device_model(&dir.path().join("gpus"), &[]), None);
    }
}
