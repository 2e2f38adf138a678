"""One pytest session under the protocol, as a plugin object registered for it: loads or opens the
record, puts the hooks in, counts, says what happened, and takes the hooks out (its methods
`pytest_terminal_summary` and `pytest_unconfigure` are pytest's hooks)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import early_key, env, versions
from .autotune import records
from .autotune.clocks import CompileClock, process_age
from .autotune.device import device_name
from .autotune.journal import journal_path, unfolded
from .autotune.race_settings import RaceSettings, race_settings
from .autotune.writer import RecordWriter
from .precompile import precompiler as precompile
from .precompile.settings import compile_settings

if TYPE_CHECKING:
    from .autotune.tuner_cache import Policy

TAG = "[warmup-harness]"
PLUGIN_NAME = "warmup-harness-session"


def say(config: Any, lines: list[str | None]) -> None:
    """Writes lines to stderr, past pytest's output capture, so that a child's log shows them."""
    capman = config.pluginmanager.getplugin("capturemanager")
    text = "".join(f"{TAG} {line}\n" for line in lines if line)
    if capman is None:
        sys.stderr.write(text)
        sys.stderr.flush()
        return
    with capman.global_and_fixture_disabled():
        sys.stderr.write(text)
        sys.stderr.flush()


class Session:
    def __init__(self, config: Any, mode: env.Mode, policy: Policy, notes: list[str],
                 compiler: precompile.Precompiler, hooks: Any, writer: RecordWriter | None = None):
        self.config = config
        self.mode = mode
        self.policy = policy  # policies.Recorder or policies.Replayer
        self.notes = notes  # said at the end: warnings found on the way
        self.compiler = compiler  # compiles a new key's configs ahead, times one config per device
        self.hooks = hooks  # the autotuner hooks (autotune.tuners.Hooks), taken off at the end
        self.writer = writer  # record mode's RecordWriter
        self.closed = False  # the closing lines were said
        self.finished = False  # record mode: the journal was folded at the end
        self.stopped = False  # the hooks are out
        self.startup_seconds: float | None = None  # from the interpreter's start to the first test
        self.exitstatus: int | None = None  # pytest's, once the session finished
        self.racer: Any = None  # record mode with racing on: autotune.race.Racer

    @classmethod
    def start(cls, config: Any, mode: env.Mode, miss_policy: env.MissPolicy) -> Session:
        """Checks the settings and files before anything runs, then puts the hooks in; raises
        ProtocolError or RecordError."""
        early_key.start()  # already under way since pytest's start, unless gated or loaded late (plugin.py)
        settings = compile_settings(lambda name: env.raw_setting(config, name))
        racing = race_settings(lambda name: env.raw_setting(config, name))  # read in replay too: refused alike
        compiler = precompile.Precompiler(settings, lambda line: say(config, [line]))
        try:
            if mode.kind is env.Kind.RECORD:
                return cls._start_record(config, mode, compiler, racing)
            return cls._start_replay(config, mode, miss_policy, compiler)
        except BaseException:
            compiler.close()
            raise

    def register(self, store_note: str) -> None:
        """Makes this session the config's plugin, and says how it runs."""
        self.config.pluginmanager.register(self, PLUGIN_NAME)
        say(self.config, [*self.opening_lines(), versions.warning(), store_note,
                          env.late_store(sys.modules, os.environ)])

    # pytest's hooks
    def pytest_collection_finish(self, session) -> None:
        if self.startup_seconds is None:  # the process's start-up ends where its first test starts
            age = process_age()
            self.startup_seconds = round(age, 3) if age is not None else None

    def pytest_sessionfinish(self, session, exitstatus) -> None:
        self.exitstatus = int(exitstatus)

    def pytest_terminal_summary(self, config) -> None:
        self._close()

    def pytest_unconfigure(self, config) -> None:
        # Without the terminal reporter (-p no:terminal) the summary is said here.
        self._close()
        self.stop()
        # Registered for this config's run only: a later run in the same process gets its own.
        if config.pluginmanager.is_registered(self):
            config.pluginmanager.unregister(self)

    def _close(self) -> None:
        if not self.closed:
            self.closed = True
            self.finish()
            say(self.config, self.closing_lines())

    @classmethod
    def _start_record(cls, config: Any, mode: env.Mode, compiler: precompile.Precompiler,
                      racing: RaceSettings) -> Session:
        from .autotune import once_recorder, policies, progress, set_aside, tuners

        try:
            mode.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise records.RecordError(f"{env.RECORD_DIR}={mode.directory}: cannot make the folder "
                                      f"({exc.strerror or exc})") from None
        records.check_writable(mode.directory, env.RECORD_DIR)
        set_aside.unreadable_record(mode.directory, mode.op, env.setting(config, env.RESUME_DIR),
                                    lambda line: say(config, [line]))
        writer = RecordWriter(mode.directory, mode.op, device_name)
        writer.open()  # refuses now, not after the first sweep, a file this run cannot add to (no lock yet)
        try:
            # By-key claims and resume (autotune/once_recorder.py), else the plain recorder.
            policy = once_recorder.start(lambda name: env.setting(config, name), mode.op, writer, device_name,
                                         lambda line: say(config, [line])) or policies.Recorder(writer.add)
        except BaseException:
            writer.release()
            raise
        policy.progress = progress.from_env(os.environ)
        clock = CompileClock()
        racer = None
        if racing.on:  # only a record session races: a replay's live sweep times every config
            from .autotune.race import Racer
            from .autotune.race_history import History

            sidecar = records.meta_path(mode.directory, mode.op)
            meta, _ = records.load_meta(sidecar)  # as the session found it
            history = History(meta, device_name, racing.history, racing.near, lambda line: say(config, [line]),
                              str(sidecar))
            racer = Racer(lambda line: say(config, [line]), compiler.as_compiled, history, audit=racing.audit)
        hooks = tuners.install(policy, compiler, clock, racer, lambda line: say(config, [line]))
        if not (isinstance(policy, once_recorder.OnceRecorder) and policy.same_folder):  # its own record may answer all
            compiler.start_early()  # its workers' imports overlap pytest's collection
        session = cls(config, mode, policy, [], compiler, hooks, writer=writer)
        session.racer = racer
        writer.extra_meta = lambda: {"startup_seconds": session.startup_seconds,
                                     "compile_seconds": clock.total(compiler),
                                     "race": racer.keys if racer is not None else None,
                                     "race_settings": racer.settings if racer is not None else None}
        writer.fold_on_sigterm()  # last: nothing after it can fail and leave the handler in
        return session

    @classmethod
    def _start_replay(cls, config: Any, mode: env.Mode, miss_policy: env.MissPolicy,
                      compiler: precompile.Precompiler) -> Session:
        path = records.record_path(mode.directory, mode.op)
        try:
            recorded = records.load_records(path)
        except FileNotFoundError:
            raise records.RecordError(
                f"{env.REPLAY_DIR}={mode.directory} holds no record for op {mode.op!r} ({path} is "
                f"missing; {_present(mode.directory)}): record one first, or check {env.CURRENT_OP}"
            ) from None
        meta, problem = records.load_meta(records.meta_path(mode.directory, mode.op))
        notes = [f"WARNING {problem}"] if problem else []
        # Where each key was made: the sidecar's, a journaled key's own line; no sidecar (a record
        # published from a file) or one that cannot be read, nothing to check.
        provenance = records.Provenance(meta) if meta is not None else None
        kernels = records.fingerprints(meta)  # a journal line's fingerprint, where newer, over the sidecar's
        try:
            journaled = unfolded(mode.directory, mode.op, recorded, provenance, kernels)
        except records.RecordError as exc:
            journaled = 0
            notes.append(f"WARNING {exc}")
        if journaled:
            notes.append(f"{journaled} key(s) replayed from {journal_path(mode.directory, mode.op)}, journaled by "
                         f"a record session that did not finish; the next record session there folds them in")
        from .autotune import policies, tuners

        import triton

        policy = policies.Replayer(recorded, str(path), miss_policy is env.MissPolicy.FAIL, lambda: None,
                                   kernels, provenance,
                                   lambda: (device_name(), triton.__version__))
        # Its compile pool starts at the first key swept live, if any.
        hooks = tuners.install(policy, compiler, say=lambda line: say(config, [line]))
        return cls(config, mode, policy, notes, compiler, hooks)

    def opening_lines(self) -> list[str]:
        path = records.record_path(self.mode.directory, self.mode.op)
        resumes = self.policy.resumes() if self.writer is not None else None
        if resumes is not None:  # a re-run resuming in place, a sweep child resuming
            what = (f"record mode, op {self.mode.op}: {resumes[1]} key(s) resumed from {resumes[0]} where met, any "
                    f"other key tuned and recorded in {path}")
        elif self.writer is not None:
            what = f"record mode, op {self.mode.op}: every autotuner decision goes to {path}"
        else:
            what = f"replay mode, op {self.mode.op}: configs pinned from {path}"
        racing = None
        if self.racer is not None:
            racing = ("racing on: each swept key's configs are timed briefly first, and only those the short timing's "
                      "measured noise cannot rule out are timed in full")
        return [what, "Triton's on-disk autotune cache is off: no config from an earlier run answers a key",
                self.compiler.describe(), racing, *self.policy.opening()]

    def finish(self) -> None:
        """Record mode: folds the journal into the record, once, before the closing lines."""
        if self.writer is not None and not self.finished:
            self.finished = True
            self.writer.restore_sigterm()
            self.writer.close()
            signature = os.environ.get(env.SIGNATURE, "").strip()
            # Its own record resumed, every test passed: the record holds every key this run met.
            if signature and self.exitstatus == 0 and self._resumes_its_own_record():
                self.writer.vouch(signature)

    def _resumes_its_own_record(self) -> bool:
        """Whether this record session resumes from its own record folder (docs/CONTRACT.md,
        "Resuming in place"): not a sweep child, no claims, not fresh; its record there or not yet."""
        from .autotune import once_recorder

        def setting(name: str) -> str | None:
            return env.setting(self.config, name)

        folder = setting(env.RESUME_DIR)
        try:
            fresh = env.truth(env.FRESH, setting(env.FRESH))
        except env.ProtocolError:
            return False
        return (folder is not None and not fresh and setting(env.CLAIM_DIR) is None
                and os.environ.get(env.WARMUP_WORKER, "").strip() != "1"
                and once_recorder.same_folder(Path(folder.strip()), self.writer.directory))

    def closing_lines(self) -> list[str]:
        op = self.mode.op
        if self.writer is not None:
            line = self._record_line()
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
        notes = self.notes + (self.writer.foreign_lines() + self.writer.notes if self.writer is not None else [])
        race = self.racer.summary() if self.racer is not None else None
        return [line, *self.policy.closing(), self.compiler.summary(), race, *notes]

    def _record_line(self) -> str:
        """What a record session did: the keys it resumed (where it resumes), those the tuner's store
        answered, those it tuned and recorded; tuning seconds only where it tuned."""
        w, op = self.writer, self.mode.op
        tuned = len(self.policy.swept)
        tuning = f" ({w.seconds:.1f}s of tuning)" if tuned else ""
        kernels = len({kernel for kernel, _ in w.decided})
        recorded = f"recorded {len(w.decided)} key(s) of {kernels} kernel(s) in {w.path}"
        resumes = self.policy.resumes()
        if resumes is None:
            return f"op {op}: {recorded}{tuning}"
        stored = len(self.policy.stored - self.policy.swept)
        store = f", {stored} answered by the tuner's store" if stored else ""
        line = f"op {op}: resumed {resumes[2]} key(s) from {resumes[0]}{store}, tuned {tuned}{tuning}"
        return f"{line}; {recorded}" if w.decided else line

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        self.finish()
        self.hooks.uninstall()
        self.compiler.close()
        if self.writer is not None:
            self.writer.release()  # last: the session is no longer live in its record folder


def _present(directory: Path) -> str:
    try:
        names = sorted(op for n in os.listdir(directory) if (op := env.op_of_record_file(n)) is not None)
    except OSError:
        return "the folder cannot be read"
    return "ops recorded there: " + ", ".join(names) if names else "no op is recorded there"
