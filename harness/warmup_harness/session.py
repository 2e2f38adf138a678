"""One pytest session under the protocol: loads or opens the record, puts the hooks in, counts, and
says what happened. The plugin (`__init__`) only forwards pytest's hooks here."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from . import env, precompile, records


class Session:
    def __init__(self, mode: env.Mode, policy, notes: list[str], compiler: precompile.Precompiler,
                 writer=None):
        self.mode = mode
        self.policy = policy  # tuners.Recorder or tuners.Replayer
        self.notes = notes  # said at the end: warnings found on the way
        self.compiler = compiler  # compiles a new key's configs ahead, times one config per device
        self.writer = writer  # record mode's RecordWriter
        self.closed = False  # the closing lines were said

    @classmethod
    def start(cls, mode: env.Mode, miss_policy: str, say: Callable[[str], None]) -> Session:
        """Checks the settings and files before anything runs, then puts the hooks in; raises
        ProtocolError or RecordError. `say` writes a line where a child's log shows it."""
        compiler = precompile.Precompiler(precompile.compile_settings(os.environ.get), say)
        try:
            if mode.kind == "record":
                return cls._start_record(mode, compiler)
            return cls._start_replay(mode, miss_policy, compiler)
        except BaseException:
            compiler.close()
            raise

    @classmethod
    def _start_record(cls, mode: env.Mode, compiler: precompile.Precompiler) -> Session:
        from . import tuners

        path = records.record_path(mode.directory, mode.op)
        try:
            mode.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise records.RecordError(f"{env.RECORD_DIR}={mode.directory}: cannot make the folder "
                                      f"({exc.strerror or exc})") from None
        if path.exists():  # refuse now, not after the first sweep, a file this run cannot add to
            records.load_records(path)
        writer = records.RecordWriter(mode.directory, mode.op, tuners.device_name)
        policy = tuners.Recorder(writer.add)
        tuners.install(policy, compiler)
        compiler.start_early()  # its workers' imports overlap pytest's collection
        return cls(mode, policy, [], compiler, writer=writer)

    @classmethod
    def _start_replay(cls, mode: env.Mode, miss_policy: str, compiler: precompile.Precompiler) -> Session:
        path = records.record_path(mode.directory, mode.op)
        if not path.exists():
            raise records.RecordError(
                f"{env.REPLAY_DIR}={mode.directory} holds no record for op {mode.op!r} ({path} is "
                f"missing; {_present(mode.directory)}): record one first, or check {env.CURRENT_OP}"
            )
        recorded = records.load_records(path)
        meta, problem = records.load_meta(records.meta_path(mode.directory, mode.op))
        notes = [f"WARNING {problem}"] if problem else []
        from . import tuners

        import triton

        if meta is not None and meta.get("triton") not in (None, triton.__version__):
            notes.append(
                f"WARNING {path} was recorded with Triton {meta['triton']}, this is Triton "
                f"{triton.__version__}: configs that no longer exist are swept live"
            )

        def check_device() -> None:
            here = tuners.device_name()
            there = meta.get("device") if meta else None
            if here and there and here != there:
                notes.append(
                    f"WARNING {path} was recorded on {there}, this process runs on {here}: "
                    f"its configs were tuned for another device"
                )

        policy = tuners.Replayer(recorded, str(path), miss_policy == "fail", check_device)
        tuners.install(policy, compiler)  # its pool starts at the first key swept live, if any
        return cls(mode, policy, notes, compiler)

    def opening_lines(self) -> list[str]:
        path = records.record_path(self.mode.directory, self.mode.op)
        if self.writer is not None:
            what = f"record mode, op {self.mode.op}: every autotuner decision goes to {path}"
        else:
            what = f"replay mode, op {self.mode.op}: configs pinned from {path}"
        return [what, "Triton's on-disk autotune cache is off: no config from an earlier run answers a key",
                self.compiler.describe()]

    def closing_lines(self) -> list[str]:
        op = self.mode.op
        if self.writer is not None:
            w = self.writer
            kernels = len({kernel for kernel, _ in w.decided})
            line = (f"op {op}: recorded {len(w.decided)} key(s) of {kernels} kernel(s) in {w.path} "
                    f"({w.seconds:.1f}s of tuning)")
        else:
            r = self.policy
            missed = f"{len(r.missed)} missing (their tests failed)" if r.fail else f"swept {len(r.missed)} live"
            line = f"op {op}: replayed {len(r.replayed)}, {missed}"
            if r.missed:
                shown = [f"{kernel} {key} ({why})" for (kernel, key), why in list(r.missed.items())[:5]]
                more = len(r.missed) - len(shown)
                line += ": " + "; ".join(shown) + (f"; and {more} more" if more else "")
        shared = sorted(self.policy.shared_ids)
        if shared:
            self.notes.append(
                f"WARNING several autotuners run one function ({', '.join(shared)}): their keys share "
                f"one entry of the record, so one's decision can answer the other's key"
            )
        return [line, self.compiler.summary(), *self.notes]

    def stop(self) -> None:
        from . import tuners

        tuners.uninstall()
        self.compiler.close()


def _present(directory: Path) -> str:
    try:
        names = sorted(n[:-5] for n in os.listdir(directory)
                       if n.endswith(".json") and not n.endswith(".meta.json"))
    except OSError:
        return "the folder cannot be read"
    return "ops recorded there: " + ", ".join(names) if names else "no op is recorded there"
