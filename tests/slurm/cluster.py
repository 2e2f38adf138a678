"""A one-node Slurm cluster on localhost for the tests: munged, slurmctld and slurmd started as
children of the test from Debian's packages, with fake GPUs for gres, and stopped by their pids.

Everything lives in one folder (`Cluster.base`): the configuration filled in from the templates
beside this file, state, spool, logs, the munge key and socket, and the fake GPU devices
(character devices with NVIDIA's major number; nothing opens them, Slurm only hands them out, one
per task, and sets each task's CUDA_VISIBLE_DEVICES). Clients reach the cluster through
`Cluster.env` (SLURM_CONF).

Processes on this kind of machine are reaped late, so "alive" means present and not a zombie.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import string
import subprocess
import tempfile
import time
from pathlib import Path

from support import HANG

HERE = Path(__file__).resolve().parent
# The daemons live in sbin, which a user's PATH may lack.
SEARCH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/bin", "/sbin"])
DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scancel", "sinfo", "scontrol")
INSTALL = ("apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge "
           "(.ci/run does it)")


def which(name: str) -> str | None:
    return shutil.which(name, path=SEARCH)


def unavailable() -> str | None:
    """Why a cluster cannot run here, or None when it can."""
    absent = [name for name in DAEMONS + CLIENTS if which(name) is None]
    if absent:
        return f"Slurm is not installed ({', '.join(absent)} not found); install it with {INSTALL}"
    try:
        pwd.getpwnam("munge")
    except KeyError:
        return f"the munge package's user 'munge' does not exist; install it with {INSTALL}"
    if os.geteuid() != 0:
        return "a Slurm cluster needs root here (slurmd runs jobs, munged runs as 'munge'); CI runs as root"
    return None


def alive(pid: int) -> bool:
    """Whether `pid` runs: present and not a zombie (a zombie may wait long to be reaped here)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2:][:1] not in ("Z", "X", "")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ClusterError(RuntimeError):
    pass


class Cluster:
    """Start with `start()`, always `stop()` (a pytest fixture's teardown does)."""

    def __init__(self, gpus: int = 4, cpus: int = 8):
        self.gpus = gpus
        self.cpus = cpus
        # Not under pytest's tmp_path: munged runs as 'munge' and must reach its folder.
        self.base = Path(tempfile.mkdtemp(prefix="warmup-slurm-"))
        self.base.chmod(0o755)
        self.host = socket.gethostname().split(".")[0]
        self.conf = self.base / "slurm.conf"
        self.env = {"SLURM_CONF": str(self.conf)}
        self.daemons: list[tuple[str, subprocess.Popen]] = []

    # --- start ---------------------------------------------------------------------------------
    def start(self) -> None:
        try:
            self._configure()
            self._start_munge()
            self._start("slurmctld", [which("slurmctld"), "-D", "-f", str(self.conf)])
            self._start("slurmd", [which("slurmd"), "-D", "-f", str(self.conf)])
            self._wait_idle()
        except BaseException:
            self.stop()
            raise

    def _configure(self) -> None:
        for sub in ("state", "spool", "log", "dev"):
            (self.base / sub).mkdir()
        for i in range(self.gpus):
            subprocess.run(["mknod", str(self.base / "dev" / f"nvidia{i}"), "c", "195", str(i)],
                           check=True, capture_output=True, text=True)
        values = {"base": self.base, "host": self.host, "cpus": self.cpus, "gpus": self.gpus,
                  "last_gpu": self.gpus - 1, "ctld_port": free_port(), "slurmd_port": free_port()}
        for name in ("slurm.conf", "gres.conf"):
            text = string.Template((HERE / f"{name}.in").read_text()).substitute(values)
            (self.base / name).write_text(text)

    def _start_munge(self) -> None:
        munge = pwd.getpwnam("munge")
        d = self.base / "munge"
        d.mkdir()
        d.chmod(0o755)  # munged: every client must reach its socket
        key = d / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        for p in (d, key):
            os.chown(p, munge.pw_uid, munge.pw_gid)
        socket_path = d / "munge.socket"
        self._start("munged", [which("munged"), "--foreground", f"--key-file={key}",
                               f"--socket={socket_path}", f"--pid-file={d / 'munged.pid'}",
                               f"--log-file={d / 'munged.log'}", f"--seed-file={d / 'munged.seed'}"],
                    user=munge.pw_uid, group=munge.pw_gid, extra_groups=[])
        self._until(lambda: socket_path.exists(), "munged to open its socket", ("munged",))

    def _start(self, name: str, argv: list, **kw) -> None:
        out = open(self.base / "log" / f"{name}.out", "w")
        with out:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                    env={**os.environ, **self.env}, start_new_session=True, **kw)
        self.daemons.append((name, proc))

    def _wait_idle(self) -> None:
        def idle() -> bool:
            done = self.client("sinfo", "-h", "-o", "%t", check=False)
            return done.returncode == 0 and done.stdout.strip() == "idle"
        self._until(idle, "the node to come up idle", DAEMONS)

    def _until(self, ready, what: str, daemons, timeout: float = HANG) -> None:
        end = time.monotonic() + timeout
        while not ready():
            for name, proc in self.daemons:
                if proc.poll() is not None:
                    raise ClusterError(f"{name} exited ({proc.returncode}) while waiting for "
                                       f"{what}:\n{self.logs(*daemons)}")
            if time.monotonic() > end:
                raise ClusterError(f"timed out waiting for {what}:\n{self.logs(*daemons)}")
            time.sleep(0.1)

    # --- use -----------------------------------------------------------------------------------
    def client(self, name: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run([which(name), *args], env={**os.environ, **self.env},
                              capture_output=True, text=True, timeout=HANG)
        if check and done.returncode != 0:
            raise ClusterError(f"{name} {' '.join(args)}: exit {done.returncode}: {done.stderr}")
        return done

    def logs(self, *names: str) -> str:
        """The tail of each named daemon's logs, for failure messages."""
        files = []
        for name in names or DAEMONS:
            files += [self.base / "log" / f"{name}.out", self.base / "log" / f"{name}.log",
                      self.base / "munge" / f"{name}.log"]
        parts = []
        for f in files:
            if f.is_file():
                tail = f.read_text(errors="replace").splitlines()[-15:]
                parts.append(f"--- {f}\n" + "\n".join(tail))
        return "\n".join(parts)

    def processes(self) -> list[int]:
        """Pids of the live processes this cluster started (its daemons' and jobs' alike): those
        whose environment names this cluster's configuration."""
        mark = f"SLURM_CONF={self.conf}".encode()
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                env = (entry / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if mark in env and alive(int(entry.name)):
                found.append(int(entry.name))
        return found

    # --- stop ----------------------------------------------------------------------------------
    def stop(self) -> list[str]:
        """Cancels every job, stops each daemon by its pid (TERM, then KILL), reaps it, stops any
        process of the cluster still alive after that, and removes the cluster's folder. Returns
        what had to be stopped that way (nothing, when every job ended as it should)."""
        slurmctld = dict(self.daemons).get("slurmctld")
        if slurmctld is not None and slurmctld.poll() is None:
            self.client("scancel", "--full", "--user", "root", check=False)
            end = time.monotonic() + HANG
            while time.monotonic() < end:
                left = self.client("squeue", "-h", "-o", "%i", check=False)
                if left.returncode != 0 or not left.stdout.strip():
                    break
                time.sleep(0.2)
        for _name, proc in reversed(self.daemons):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=HANG)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=HANG)
        self.daemons.clear()
        left = self._stop_leftovers()
        shutil.rmtree(self.base, ignore_errors=True)
        return left

    def _stop_leftovers(self) -> list[str]:
        end = time.monotonic() + HANG
        while self.processes() and time.monotonic() < end:
            time.sleep(0.1)
        left = []
        for pid in self.processes():
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                os.kill(pid, signal.SIGKILL)
            except OSError:
                continue
            left.append(f"pid {pid}: {argv.decode(errors='replace')}")
        return left
