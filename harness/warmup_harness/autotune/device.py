"""The device this process runs on, as the sidecar names it and a replay compares it.

The name is warmup-plan's (protocol's `probe::device_name`, the same rules in the same order), so
that a record the harness made is one warmup-plan can tell is for this device without starting an
interpreter: the NVIDIA driver's files, else AMD's sysfs and KFD topology, else any PCI GPU's ids,
read under `/` or, for tests, `WARMUP_PROBE_ROOT`. Where those name nothing (the plan then gives
the record cache a folder of this machine's own): the accelerator's runtime, as already imported,
never importing one (torch's device module FlagGems names, `flag_gems.runtime.device.name`, else
the first of `torch.cuda`, `npu`, `mlu`, `musa`, `xpu` that has a device), else Triton's target.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..env import PROBE_ROOT

VISIBLE = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")


def device_name() -> str | None:
    """The device this process runs on: the probe's name, else from modules already imported."""
    token = next((os.environ[v].split(",")[0].strip() for v in VISIBLE if os.environ.get(v, "").strip()), None)
    probed = probe_name(probe_root(), [token] if token else [])
    if probed is not None:
        return probed
    name = runtime_name()
    if name is not None:
        return name
    try:
        from ..triton_private import current_target

        target = current_target()
        return f"{target.backend} {target.arch}"
    except Exception:
        return None


RUNTIMES = ("cuda", "npu", "mlu", "musa", "xpu")  # torch's device modules, by vendor


def runtime_name() -> str | None:
    """The current device's name as torch's device module gives it, where torch is imported: the
    module FlagGems runs on where it is imported, else the first of RUNTIMES with a device."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    runtime = sys.modules.get("flag_gems.runtime")
    preferred = getattr(getattr(runtime, "device", None), "name", None)
    for name in ([preferred] if isinstance(preferred, str) else []) + list(RUNTIMES):
        try:
            module = getattr(torch, name, None)
            if module is not None and module.is_available():
                text = str(module.get_device_name(module.current_device())).strip()
                if text:
                    return text
        except Exception:
            continue
    return None


def probe_root() -> Path:
    return Path(os.environ.get(PROBE_ROOT) or "/")


def probe_name(root: Path, tokens: list[str]) -> str | None:
    """The listed devices' model under `root`: the first rule that names them (one model only)."""
    return _nvidia(root / "proc/driver/nvidia/gpus", tokens) or _amd(root) or _pci(root)


def _read(path: Path) -> str | None:
    """A small sysfs file's text, trimmed; None when it cannot be read or is blank. Regular files
    only, as the tools read theirs: a FIFO there would block."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        import stat

        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        text = os.read(fd, 1 << 16).decode("utf-8", "replace").strip()
    except OSError:
        return None
    finally:
        os.close(fd)
    return text or None


def _entries(folder: Path) -> list[Path]:
    try:
        return sorted(folder.iterdir(), key=lambda p: os.fsencode(p.name))
    except OSError:
        return []


def _one(names: list[str | None]) -> str | None:
    if names and names[0] is not None and all(n == names[0] for n in names):
        return names[0]
    return None


def _field(text: str, name: str) -> str | None:
    """The value of the first line of `text` that starts with `name`, trimmed."""
    return next((line[len(name):].strip() for line in text.splitlines() if line.startswith(name)), None)


def _nvidia(gpus: Path, tokens: list[str]) -> str | None:
    found: list[tuple[str, str]] = []  # (uuid, model)
    for folder in _entries(gpus):
        text = _read(folder / "information")
        if text is None:
            continue
        model = _field(text, "Model:")
        if model:
            found.append((_field(text, "GPU UUID:") or "", model))
    if not found:
        return None
    if all(m == found[0][1] for _, m in found):
        return found[0][1]
    models = [next((m for uuid, m in found if uuid and uuid == t), None) for t in tokens]
    return _one(models)


def _amd(root: Path) -> str | None:
    cards = [p / "device" for p in _entries(root / "sys/class/drm")
             if p.name.startswith("card") and p.name[4:].isascii() and p.name[4:].isdigit()]
    cards = [d for d in cards if _read(d / "vendor") == "0x1002"]
    product = _one([_read(d / "product_name") for d in cards])
    if product is not None:
        return product

    def gpu(node: Path) -> bool:
        for line in (_read(node / "properties") or "").splitlines():
            words = line.split()
            if len(words) >= 2 and words[0] == "simd_count":
                return words[1].isascii() and words[1].isdigit() and int(words[1]) > 0
        return False

    nodes = [n for n in _entries(root / "sys/class/kfd/kfd/topology/nodes") if gpu(n)]
    return _one([(f"AMD {name}" if (name := _read(n / "name")) else None) for n in nodes])


def _hex(text: str | None) -> str | None:
    if text is None:
        return None
    digits = text.removeprefix("0x").lower()
    return digits if digits and all(c in "0123456789abcdef" for c in digits) else None


def _pci(root: Path) -> str | None:
    found: list[tuple[str, str | None]] = []  # (class, name)
    for dev in _entries(root / "sys/bus/pci/devices"):
        cls = _hex(_read(dev / "class"))
        if cls is None or len(cls) != 6 or not cls.startswith(("03", "12")):
            continue
        vendor, device = _hex(_read(dev / "vendor")), _hex(_read(dev / "device"))
        found.append((cls, f"PCI {vendor}:{device}" if vendor and device else None))
    if any(not cls.startswith("0300") for cls, _ in found):
        found = [(cls, name) for cls, name in found if not cls.startswith("0300")]
    return _one([name for _, name in found])
