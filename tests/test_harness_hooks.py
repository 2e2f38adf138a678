"""warmup_harness's hooks on Triton's Autotuner, in this process: what they do to a tuner's store,
its disk cache flag and its pruning, and that taking them off leaves Triton as it was; and the
parts the hooks feed, driven directly: the record writer's journal, the settings' getter, the
compile clock.

The tuners here launch a stand-in for a compiled kernel and time with a `do_bench` that returns a
constant (Autotuner's own parameter for a custom timer): there is no GPU to launch or time on.
"""

from __future__ import annotations

import json
import math
import sys

import pytest
import triton
from triton.runtime.autotuner import Autotuner

from support import ROOT

sys.path.insert(0, str(ROOT / "harness"))
from warmup_harness import env  # noqa: E402
from warmup_harness.autotune import configs  # noqa: E402
from warmup_harness.autotune import policies  # noqa: E402
from warmup_harness.autotune import records  # noqa: E402
from warmup_harness.autotune import tuners  # noqa: E402
from warmup_harness.autotune.race_settings import race_settings  # noqa: E402


class Launcher:
    """What Autotuner calls `fn`: something with `run` and `arg_names` over a Python function."""

    def __init__(self, fn):
        self.fn = fn
        self.arg_names = ["x", "n"]
        self.launches = []

    def run(self, *args, grid=None, warmup=False, **kwargs):
        self.launches.append(kwargs)


def body(x, n):
    pass


def make_tuner(**kw) -> Autotuner:
    configs = [triton.Config({"BLOCK": b}, num_warps=4) for b in (64, 128, 256)]
    return Autotuner(Launcher(body), ["x", "n"], configs, ["n"], None, None,
                     do_bench=lambda kernel_call, quantiles: (kernel_call(), [1.0] * len(quantiles))[1], **kw)


@pytest.fixture
def hooks():
    """Installs a policy for one test, and takes the hooks off after it whatever happens."""

    def install(policy):
        tuners.install(policy)
        return policy

    yield install
    tuners.uninstall()


def test_hooks_turn_off_the_disk_cache_a_tuner_asked_for_and_give_it_back_when_removed(hooks):
    tuner = make_tuner(cache_results=True)
    assert tuner.cache_results is True
    hooks(tuners.Policy())
    assert tuner.cache_results is False and make_tuner(cache_results=True).cache_results is False
    tuners.uninstall()
    assert tuner.cache_results is True
    assert "cache" not in Autotuner.__dict__ and "cache_results" not in Autotuner.__dict__
    assert Autotuner.prune_configs.__qualname__ == "Autotuner.prune_configs"


def test_a_tuner_that_saves_and_restores_its_store_keeps_the_store_not_the_view(hooks):
    tuner = make_tuner()
    hooks(tuners.Policy())
    store = tuner.__dict__["cache"]
    saved = tuner.cache
    assert isinstance(saved, tuners.TunerCache) and saved.raw is store
    tuner.cache = {}
    tuner.cache = saved
    assert tuner.__dict__["cache"] is store


def test_record_policy_sees_each_new_key_once_with_the_tuners_winner(hooks):
    decided = []
    hooks(policies.Recorder(lambda kernel, key, config, seconds, fingerprint:
                            decided.append((kernel, key, config, seconds))))
    tuner = make_tuner()
    for n in (10, 10, 20):
        tuner.run(object(), n)
    assert [(k, key) for k, key, _, _ in decided] == [(f"{__name__}:body", "[10]"), (f"{__name__}:body", "[20]")]
    assert decided[0][2]["kwargs"] == {"BLOCK": 64} and decided[0][3] >= 0


def test_the_seam_before_timing_runs_once_per_new_key_with_the_pruned_configs(hooks, monkeypatch):
    seen = []
    monkeypatch.setattr(tuners.Hooks, "before_timing", lambda self, tuner, configs, kwargs: seen.append(len(configs)))
    hooks(policies.Recorder(lambda *a: None))
    tuner = make_tuner(prune_configs_by={"early_config_prune": lambda configs, nargs, **kw: configs[:2]})
    for n in (10, 10, 20):
        tuner.run(object(), n)
    assert seen == [2, 2]


def test_replay_pins_the_tuners_own_config_object(hooks):
    tuner = make_tuner()
    recorded = {f"{__name__}:body": {"[10]": configs.config_record(tuner.configs[2])}}
    replayer = hooks(policies.Replayer(recorded, "rec/mm.json", fail=False, first_lookup=lambda: None))
    tuner.run(object(), 10)
    assert tuner.best_config is tuner.configs[2]
    assert tuner.fn.launches[-1]["BLOCK"] == 256
    assert replayer.replayed == {(f"{__name__}:body", "[10]")} and replayer.missed == {}


def test_replay_pins_a_config_recorded_with_a_null_pre_hook_by_an_earlier_harness(hooks):
    tuner = make_tuner()
    for config in tuner.configs:  # the kernel's own configs have a pre-hook, as FlagGems' TMA ones do
        config.pre_hook = lambda nargs: None
    old = {**configs.config_record(tuner.configs[1]), "pre_hook": None}
    replayer = hooks(policies.Replayer({f"{__name__}:body": {"[10]": old}}, "rec/mm.json", fail=False,
                                     first_lookup=lambda: None))
    tuner.run(object(), 10)
    assert tuner.best_config is tuner.configs[1] and replayer.missed == {}


def test_config_record_leaves_out_a_pre_hook_that_is_none_as_a_store_rebuilds_it():
    assert "pre_hook" not in configs.config_record(triton.Config({"BLOCK_M": 64}, num_warps=8))


def test_config_record_holds_every_attribute_of_this_tritons_config_but_the_hook():
    config = triton.Config({"BLOCK_M": 64}, num_warps=8, num_stages=4, pre_hook=print)
    record = configs.config_record(config)
    assert set(record) == set(vars(config)) - {"pre_hook"}
    assert record["kwargs"] == {"BLOCK_M": 64} and record["num_warps"] == 8 and record["num_stages"] == 4
    records.check_records({"k": {"[1]": record}}, "x.json")


def test_kernel_ids_and_keys_are_stable_text():
    heuristics = triton.heuristics({"B": lambda args: 1})(triton.jit(body))
    tuner = Autotuner(heuristics, ["x", "n"], [triton.Config({})], ["n"], None, None)
    assert configs.kernel_id(tuner) == f"{__name__}:body"
    assert configs.key_text((1024, 512, "torch.float16")) == '[1024, 512, "torch.float16"]'


def test_a_replayed_key_after_its_first_launch_is_answered_without_the_policy(hooks, monkeypatch):
    # A replay's launches are what the benchmark times: after the first, a key costs a dict lookup.
    tuner = make_tuner()
    recorded = {f"{__name__}:body": {"[10]": configs.config_record(tuner.configs[1])}}
    replayer = hooks(policies.Replayer(recorded, "rec/mm.json", fail=False, first_lookup=lambda: None))
    tuner.run(object(), 10)
    monkeypatch.setattr(replayer, "_pin", lambda *a: pytest.fail("the policy was asked again"))
    for _ in range(3):
        tuner.run(object(), 10)
    assert [launch["BLOCK"] for launch in tuner.fn.launches] == [128] * 4


def test_a_settled_keys_store_is_the_tuners_and_clearing_it_tunes_the_key_again(hooks):
    # The view holds settled keys itself (a dict), but what the tuner reads of its store is the store.
    recorder = hooks(policies.Recorder(lambda *a: None))
    tuner = make_tuner()
    tuner.run(object(), 10)
    assert list(tuner.cache.keys()) == [(10,)] and len(tuner.cache) == 1 and tuner.cache == tuner.__dict__["cache"]
    tuner.cache.clear()
    assert (10,) not in tuner.cache and tuner.__dict__["cache"] == {}
    tuner.run(object(), 10)
    assert (10,) in tuner.cache and len(tuner.fn.launches) == 2 * (1 + 3)  # tuned twice: 3 timed, 1 launched
    assert recorder.shared_ids == set()


def test_a_later_sessions_hooks_never_answer_from_an_earlier_sessions_pins(hooks):
    tuner = make_tuner()
    recorded = {f"{__name__}:body": {"[10]": configs.config_record(tuner.configs[1])}}
    hooks(policies.Replayer(recorded, "rec/mm.json", fail=False, first_lookup=lambda: None))
    tuner.run(object(), 10)
    tuners.uninstall()
    hooks(policies.Recorder(lambda *a: None))
    assert (10,) not in tuner.cache  # the record session tunes it


def test_two_live_tuners_over_one_function_are_named_as_sharing_a_record_entry(hooks):
    recorder = hooks(policies.Recorder(lambda *a: None))
    first, second = make_tuner(), make_tuner()
    first.run(object(), 10)
    assert recorder.shared_ids == set()
    second.run(object(), 10)
    assert recorder.shared_ids == {f"{__name__}:body"}


def test_flaggems_imported_before_the_plugin_with_another_store_is_a_warning():
    from types import SimpleNamespace

    from warmup_harness import env

    mine = {"FLAGGEMS_DB_URL": "sqlite:///:memory:"}
    assert env.late_store({}, mine) is None
    assert env.late_store({"flag_gems.utils.libentry": SimpleNamespace(FLAGGEMS_DB_URL="sqlite:///:memory:")},
                          mine) is None
    late = env.late_store({"flag_gems.utils.libentry": SimpleNamespace(FLAGGEMS_DB_URL=None)}, mine)
    assert late and "FlagGems was imported before this plugin" in late


def test_a_keys_cost_in_record_mode_does_not_grow_with_the_records_size(tmp_path, monkeypatch):
    from warmup_harness.autotune import atomic
    from warmup_harness.autotune import writer

    big = {"k": {f"[{i}]": {"kwargs": {"BLOCK": i}, "num_warps": 4} for i in range(40000)}}
    (tmp_path / "mm.json").write_text(json.dumps(big))
    record_bytes = (tmp_path / "mm.json").stat().st_size
    out = writer.RecordWriter(tmp_path, "mm", lambda: "dev")
    out.open()
    replaced = []
    real = atomic.write_bytes
    monkeypatch.setattr(atomic, "write_bytes", lambda path, data: (replaced.append(path.name), real(path, data))[1])
    for i in range(52):
        out.add("k2", f"[{i}]", {"kwargs": {"BLOCK": i}, "num_warps": 8}, 0.5)
    assert replaced == [], "a key rewrote a whole file"
    written = (tmp_path / ".mm.journal").stat().st_size  # every byte the 52 keys wrote
    assert written < 52 * 200 < record_bytes / 100
    out.close()  # the session's end: one fold
    assert replaced == ["mm.json", "mm.meta.json"]
    folded = json.loads((tmp_path / "mm.json").read_text())
    assert len(folded["k"]) == 40000 and folded["k2"]["[51]"] == {"kwargs": {"BLOCK": 51}, "num_warps": 8}
    assert json.loads((tmp_path / "mm.meta.json").read_text())["tune_seconds"]["k2"]["[3]"] == 0.5
    assert not (tmp_path / ".mm.journal").exists()


def test_a_setting_is_its_variable_else_its_ini_option_else_none(monkeypatch):
    from types import SimpleNamespace

    from warmup_harness import env

    def getini(name):
        if name != "warmup_harness_replay_miss":
            raise ValueError(name)
        return "fail"

    config = SimpleNamespace(getini=getini)
    monkeypatch.delenv("WARMUP_HARNESS_REPLAY_MISS", raising=False)
    assert env.setting(config, "WARMUP_HARNESS_REPLAY_MISS") == "fail"
    assert env.setting(config, "WARMUP_HARNESS_OTHER") is None and env.setting(None, "WARMUP_HARNESS_X") is None
    monkeypatch.setenv("WARMUP_HARNESS_REPLAY_MISS", " ")  # blank counts as unset
    assert env.setting(config, "WARMUP_HARNESS_REPLAY_MISS") == "fail"
    monkeypatch.setenv("WARMUP_HARNESS_REPLAY_MISS", "sweep")
    assert env.setting(config, "WARMUP_HARNESS_REPLAY_MISS") == "sweep"
    assert env.miss_policy(None, "sweep") is env.MissPolicy.SWEEP
    assert env.miss_policy("fail", "sweep") is env.MissPolicy.FAIL


def test_compile_seconds_are_the_precompilers_reports_plus_loads_outside_timing(monkeypatch):
    from types import SimpleNamespace

    from warmup_harness.autotune import clocks

    now = [100.0]  # a clock the test moves, so that nothing here depends on how fast the machine is
    monkeypatch.setattr(clocks.time, "perf_counter", lambda: now[0])
    clock = clocks.CompileClock()
    lock = SimpleNamespace(waited_s=0.0)
    nothing_ahead = SimpleNamespace(reports=[], timing_lock=lock)
    assert clock.total(nothing_ahead) is None, "the tuner's own compiles are inside its timing"

    def timing():
        now[0] += 1.0  # the timed runs
        return "timed"

    def bench(timed):  # what the precompiler's bench does: load the kernel, wait for the lock, time
        now[0] += 2.0  # loading (compiling a config left to Triton)
        now[0] += 5.0
        lock.waited_s += 5.0  # waiting for the device's lock is not compiling
        return timed()

    assert clock.bench(nothing_ahead, bench, timing) == "timed"
    assert clock.loading == 2.0
    ahead = SimpleNamespace(reports=[SimpleNamespace(capture_s=1.0, compile_s=2.5)], timing_lock=lock)
    assert clock.total(ahead) == 5.5


def test_a_sidecar_written_by_two_processes_holds_the_longest_start_up_and_the_sum_of_compiling(tmp_path):
    from warmup_harness.autotune import writer

    for startup, compiled in ((2.0, 3.0), (1.5, 4.0)):
        out = writer.RecordWriter(tmp_path, "mm", lambda: "dev")
        out.extra_meta = lambda s=startup, c=compiled: {"startup_seconds": s, "compile_seconds": c}
        out.open()
        out.add("k", f"[{startup}]", {"kwargs": {}}, 0.5)
        out.close()
    meta = json.loads((tmp_path / "mm.meta.json").read_text())
    assert meta["startup_seconds"] == 2.0 and meta["compile_seconds"] == 7.0


def test_a_journal_line_cut_short_in_the_middle_loses_only_that_line(tmp_path):
    from warmup_harness.autotune import writer

    whole = json.dumps({"kernel": "k", "key": "[1]", "config": {"kwargs": {"B": 1}}, "seconds": 1.0}) + "\n"
    # A sibling killed mid-append left its line without a newline; this process appends after it.
    (tmp_path / ".mm.journal").write_text(whole + '{"kernel": "k", "key": "[2]", "con')
    (tmp_path / "mm.json").write_text(json.dumps({"big": {f"[{i}]": {"kwargs": {}} for i in range(50000)}}))
    out = writer.RecordWriter(tmp_path, "mm", lambda: "dev")  # a record over 1 MiB: the keys wait in the journal
    out.add("k", "[3]", {"kwargs": {"B": 3}}, 0.5)
    lines = (tmp_path / ".mm.journal").read_text().splitlines()
    assert lines[1] == '{"kernel": "k", "key": "[2]", "con', "the append was glued onto the cut line"
    assert [(k, key) for k, key, *_ in writer.journal_entries((tmp_path / ".mm.journal").read_bytes())] == \
        [("k", "[1]"), ("k", "[3]")]
    out.close()
    folded = json.loads((tmp_path / "mm.json").read_text())
    assert folded["k"] == {"[1]": {"kwargs": {"B": 1}}, "[3]": {"kwargs": {"B": 3}}}


def test_a_record_session_holds_a_shared_lock_on_its_sessions_file_from_its_first_write_on(tmp_path):
    import fcntl
    import os
    import stat

    from warmup_harness.autotune import writer

    out = writer.RecordWriter(tmp_path, "mm", lambda: "dev")
    out.open()
    sessions = tmp_path / ".mm.sessions"
    assert list(tmp_path.iterdir()) == [], "a session that has written nothing leaves the folder alone"
    out.add("k", "[1]", {"kwargs": {}}, 0.1)
    assert stat.S_IMODE(sessions.stat().st_mode) & 0o7777 == 0o644 & ~_umask()
    fd = os.open(sessions, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # another session may be live beside it
        fcntl.flock(fd, fcntl.LOCK_UN)
        with pytest.raises(BlockingIOError):  # warmup-publish's test: a session is live
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        out.close()  # folded, but the session lives on until it is released
        with pytest.raises(BlockingIOError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        out.release()
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)
    assert sessions.exists(), "the sessions file is never removed"


def _umask() -> int:
    import os

    mask = os.umask(0)
    os.umask(mask)
    return mask


EARLIER_KEYS = 3000


def earlier_record(folder, keys: int = EARLIER_KEYS, device: str = "dev") -> None:
    """An earlier record of `keys` keys of one kernel, and its sidecar (this Triton, `device`)."""
    folder.mkdir(exist_ok=True)
    kernel = f"{__name__}:body"
    record = {kernel: {f"[{i}]": configs.config_record(triton.Config({"BLOCK": 64}, num_warps=4))
                       for i in range(keys)}}
    (folder / "mm.json").write_text(json.dumps(record))
    meta = {"format": "warmup-harness-meta", "version": 1, "op": "mm", "triton": triton.__version__,
            "device": device, "tune_seconds": {kernel: {key: 0.25 for key in record[kernel]}}}
    (folder / "mm.meta.json").write_text(json.dumps(meta))


def resumed_session(hooks, record_dir, resume_dir, monkeypatch):
    """A record session's writer and policy with resume, as session.py builds them, and a list of
    every file write (path name, bytes) the record writer makes from then on."""
    from warmup_harness.autotune import atomic
    from warmup_harness.autotune import once_recorder
    from warmup_harness.autotune import writer

    record_dir.mkdir(exist_ok=True)
    out = writer.RecordWriter(record_dir, "mm", lambda: "dev")
    out.open()
    settings = {"WARMUP_HARNESS_RESUME_DIR": str(resume_dir)}
    policy = once_recorder.start(settings.get, "mm", out, lambda: "dev", lambda line: None)
    hooks(policy)
    written = []
    real = atomic.write_bytes
    monkeypatch.setattr(atomic, "write_bytes",
                        lambda path, data: (written.append((path.name, len(data))), real(path, data))[1])
    return out, policy, written


def test_resume_from_another_folder_carries_its_keys_in_one_write_however_many(tmp_path, hooks, monkeypatch):
    earlier_record(tmp_path / "earlier")
    out, policy, written = resumed_session(hooks, tmp_path / "rec", tmp_path / "earlier", monkeypatch)
    tuner = make_tuner()
    tuner.run(object(), 10)  # a key the earlier record holds: pinned, and every earlier key carried
    record_bytes = (tmp_path / "earlier" / "mm.json").stat().st_size
    assert [name for name, _ in written] == ["mm.json", "mm.meta.json"], "one write of each, not one per key"
    assert sum(size for _, size in written) < 4 * record_bytes
    assert not (tmp_path / "rec" / ".mm.journal").exists()
    tuner.run(object(), EARLIER_KEYS + 1)  # a key it lacks: tuned and recorded
    out.close()
    record = json.loads((tmp_path / "rec" / "mm.json").read_text())[f"{__name__}:body"]
    assert len(record) == EARLIER_KEYS + 1
    meta = json.loads((tmp_path / "rec" / "mm.meta.json").read_text())
    assert meta["tune_seconds"][f"{__name__}:body"]["[2999]"] == 0.25, "the earlier seconds come with the keys"
    assert policy.carried_keys == EARLIER_KEYS and out.seconds < 0.25 * 10


def test_resume_from_its_own_folder_writes_nothing_for_the_keys_it_holds(tmp_path, hooks, monkeypatch):
    earlier_record(tmp_path / "rec")
    out, policy, written = resumed_session(hooks, tmp_path / "rec", tmp_path / "rec", monkeypatch)
    tuner = make_tuner()
    for n in (10, 20, 2999):
        tuner.run(object(), n)
    out.close()
    assert written == [] and not (tmp_path / "rec" / ".mm.journal").exists()
    assert out.folds == 0 and len(policy.resumed) == 3 and policy.same_folder
    assert tuner.fn.launches[-1]["BLOCK"] == 64


# --- racing (autotune/race.py) -----------------------------------------------------------------


class RaceBench:
    """A do_bench that tells a short timing (the race's: a warm-up and a repetition budget) from a
    full one (the tuner's: neither) and from the race's warm-up (brief.WARM_MS of warm-up), and
    answers each config's from a table: `short[block]` a list of the short timings it gives one
    after another (the last repeated), `full[block]` one value."""

    def __init__(self, launcher, short: dict, full: dict):
        self.launcher, self.short, self.full = launcher, short, full
        self.calls: list[tuple[int, str]] = []

    def __call__(self, kernel_call, quantiles=None, warmup=None, rep=None):
        from warmup_harness.autotune import brief

        kernel_call()
        block = self.launcher.launches[-1]["BLOCK"]
        if warmup == brief.WARM_MS:
            self.calls.append((block, "warm"))
            return [0.0] * len(quantiles) if quantiles else 0.0
        if warmup is None and rep is None:
            self.calls.append((block, "full"))
            ms = self.full[block]
        else:
            self.calls.append((block, "short"))
            left = self.short[block]
            ms = left.pop(0) if len(left) > 1 else left[0]
        return [ms] * len(quantiles) if quantiles else ms

    def timed(self, how: str) -> set[int]:
        return {block for block, kind in self.calls if kind == how}


def race_tuner(short: dict, full: dict, cls=Autotuner, **kw):
    launcher = Launcher(body)
    configs = [triton.Config({"BLOCK": b}, num_warps=4) for b in (64, 128, 256)]
    timer = RaceBench(launcher, short, full)
    tuner = cls(launcher, ["x", "n"], configs, ["n"], None, None, do_bench=timer, **kw)
    return tuner, timer


def raced(tuner, n=10):
    """Records one key of `tuner` with racing on: (the recorded config's BLOCK, the racer)."""
    from warmup_harness.autotune import race

    decided = []
    racer = race.Racer(lambda line: None)
    tuners.install(policies.Recorder(lambda kernel, key, config, seconds, fp: decided.append(config)), racer=racer)
    try:
        tuner.run(object(), n)
    finally:
        tuners.uninstall()
    return decided[0]["kwargs"]["BLOCK"], racer


QUIET = [1.0, 1.01, 0.99, 1.0, 1.02]  # the best config's short timings: 3% of spread


def test_race_a_config_three_times_slower_on_the_short_timing_is_never_timed_in_full():
    tuner, timer = race_tuner({64: list(QUIET), 128: [3.0], 256: [1.01]}, {64: 1.0, 128: 0.5, 256: 1.02})
    winner, racer = raced(tuner)
    assert timer.timed("short") == {64, 128, 256}
    assert 128 not in timer.timed("full"), timer.calls
    assert winner == 64
    assert racer.keys == {f"{__name__}:body": {"[10]": {"raced": 3, "retimed": 2, "skipped": 0, "near": [0, 2],
                                                        "winner": 0}}}
    assert racer.summary().startswith("race: 1 key(s), 3 configs raced in "), racer.summary()
    assert " 2 re-timed in full in " in racer.summary()


def test_race_two_configs_within_the_noise_are_both_timed_in_full_and_the_faster_full_timing_wins():
    tuner, timer = race_tuner({64: list(QUIET), 128: [1.01], 256: [5.0]}, {64: 1.0, 128: 0.9, 256: 0.1})
    winner, racer = raced(tuner)
    assert timer.timed("full") == {64, 128}, timer.calls
    assert winner == 128, "the winner is the fastest full timing, not the fastest short one"
    assert tuner.configs[2] not in tuner.configs_timings, "a dropped config never reaches the tuner"


def test_race_noise_is_measured_a_noisy_device_keeps_more_contenders():
    full = {64: 1.0, 128: 0.9, 256: 1.1}
    quiet, quiet_timer = race_tuner({64: [1.0], 128: [1.05], 256: [2.0]}, full)
    noisy, noisy_timer = race_tuner({64: [1.0, 1.1, 0.95, 1.05, 1.0], 128: [1.05], 256: [2.0]}, full)
    assert raced(quiet)[0] == 64
    assert quiet_timer.timed("full") == {64}, "no spread: a config slower on the short timing is dropped"
    assert raced(noisy)[0] == 128
    assert noisy_timer.timed("full") == {64, 128}, "the spread measured keeps the config within it"
    assert noisy_timer.calls.count((64, "short")) == 5, "the best config's short timing is repeated"


class OwnRunTuner(Autotuner):
    """Replaces `run` as FlagGems' LibTuner does: its own key (rounded) and its own store."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.cache = {}

    def run(self, *args, **kwargs):
        self.nargs = dict(zip(self.arg_names, args))
        key = (self.nargs["n"] // 100,)
        if key not in self.cache:
            pruned = self.prune_configs(kwargs)
            timings = {config: self._bench(*args, config=config, **kwargs) for config in pruned}
            self.cache[key] = min(timings, key=timings.get)
        config = self.cache[key]
        self.fn.run(*args, **kwargs, **config.all_kwargs())


def test_race_a_tuner_that_replaces_run_races_too():
    tuner, timer = race_tuner({64: [2.0], 128: list(QUIET), 256: [9.0]}, {64: 1.0, 128: 1.0, 256: 1.0},
                              cls=OwnRunTuner)
    winner, racer = raced(tuner, n=250)
    assert winner == 128
    assert timer.timed("full") == {128} and timer.timed("short") == {64, 128, 256}, timer.calls
    assert racer.keys == {f"{__name__}:body": {"[2]": {"raced": 3, "retimed": 1, "skipped": 0, "near": [1],
                                                       "winner": 1}}}


def test_race_a_tuner_whose_bench_never_calls_do_bench_is_timed_in_full_and_said():
    from warmup_harness.autotune import race

    class OwnBench(Autotuner):
        def _bench(self, *args, config, **meta):
            timed.append(config.kwargs["BLOCK"])
            return [float(config.kwargs["BLOCK"])] * 3

    timed, lines = [], []
    tuner = OwnBench(Launcher(body), ["x", "n"], [triton.Config({"BLOCK": b}) for b in (64, 128, 256)], ["n"],
                     None, None, do_bench=lambda kernel_call, quantiles, **kw: [1.0] * 3)
    racer = race.Racer(lines.append)
    tuners.install(policies.Recorder(lambda *a: None), racer=racer)
    try:
        tuner.run(object(), 10)
    finally:
        tuners.uninstall()
    assert timed == [64, 128, 256] and tuner.best_config.kwargs["BLOCK"] == 64
    assert racer.keys == {} and len(lines) == 1 and "is not raced (its _bench times without do_bench)" in lines[0]


def test_race_a_tuner_with_the_deprecated_warmup_and_rep_is_timed_briefly_by_the_drivers_benchmarker(
        monkeypatch):
    """As FlagGems' LibTuner is made (`warmup=5, rep=10`): its do_bench takes no budget, so the
    short timings are the driver's benchmarker's, and the full ones its own, with its budget."""
    import warnings

    import triton.testing
    from warmup_harness import triton_private

    launcher = Launcher(body)
    calls = []
    short = {64: 1.0, 128: 4.0, 256: 1.0}

    def do_bench(kernel_call, warmup=25, rep=100, quantiles=None, **kw):
        kernel_call()
        block = launcher.launches[-1]["BLOCK"]
        calls.append((block, warmup, rep))
        ms = short[block] if (warmup, rep) == (1, 2) else {64: 1.0, 128: 0.1, 256: 0.5}[block]
        return [ms] * len(quantiles)

    monkeypatch.setattr(triton.testing, "do_bench", do_bench)  # what the tuner's own lambda calls
    monkeypatch.setattr(triton_private, "device_benchmarker", lambda: do_bench)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        tuner = Autotuner(launcher, ["x", "n"], [triton.Config({"BLOCK": b}) for b in (64, 128, 256)], ["n"],
                          None, None, warmup=5, rep=10)
    winner, racer = raced(tuner)
    assert winner == 256
    assert {(b, w, r) for b, w, r in calls if (w, r) == (5, 10)} == {(64, 5, 10), (256, 5, 10)}, calls
    assert calls[0] == (64, 25, 2), "the device is warmed first: the first config, 25 ms of warm-up"
    assert all((w, r) in ((1, 2), (5, 10)) for _, w, r in calls[1:]), calls


class FakeBenchDevice:
    """triton_private.BenchDevice on the CPU: each timed launch of a config gives its next sample from
    `samples[block]` (the last repeated)."""

    def __init__(self, launcher, samples: dict):
        self.launcher, self.samples = launcher, {block: list(ms) for block, ms in samples.items()}

    def time(self, fn, count):
        out = []
        for _ in range(count):
            fn()
            left = self.samples[self.launcher.launches[-1]["BLOCK"]]
            out.append(left.pop(0) if len(left) > 1 else left[0])
        return out


def driver_timed_tuner(monkeypatch, samples: dict, full: dict):
    """A tuner made as FlagGems' LibTuner is (`warmup=5, rep=10`: it times as the driver does),
    the driver's timing primitives a FakeBenchDevice, and testing.do_bench answering `full`."""
    import warnings

    import triton.testing
    from warmup_harness import triton_private

    launcher = Launcher(body)
    full_timed = []

    def do_bench(kernel_call, warmup=25, rep=100, quantiles=None, **kw):
        kernel_call()
        block = launcher.launches[-1]["BLOCK"]
        assert (warmup, rep) == (5, 10), "a brief timing never goes through do_bench"
        full_timed.append(block)
        return [full[block]] * len(quantiles)

    monkeypatch.setattr(triton.testing, "do_bench", do_bench)
    monkeypatch.setattr(triton_private, "bench_device", lambda: FakeBenchDevice(launcher, samples))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        tuner = Autotuner(launcher, ["x", "n"], [triton.Config({"BLOCK": b}) for b in (64, 128, 256)], ["n"],
                          None, None, warmup=5, rep=10)
    return tuner, launcher, full_timed


def test_race_a_tuner_timed_as_the_driver_times_is_timed_briefly_without_do_bench_and_a_clear_loser_stops_early(
        monkeypatch):
    """Brief: one untimed launch, two timed; a config whose two are both past twice the best so far
    is timed no more (3 launches), one that is not gets more (up to BRIEF_REP_MS of kernel time)."""
    tuner, launcher, full_timed = driver_timed_tuner(
        monkeypatch, {64: [0.25], 128: [0.6, 0.05, 0.3], 256: [0.27]}, {64: 0.5, 128: 0.45, 256: 0.52})
    winner, _ = raced(tuner)
    launches = [launch["BLOCK"] for launch in launcher.launches]
    # The device warmed first on 64: one launch timed (0.25 ms), 25 ms / 0.25 ms = 100 more. Then 64,
    # with nothing to be out-run by: 1 + 4 launches (1 ms of 0.25 ms samples). 128's first two (0.6,
    # 0.05) are not both past 2 x 0.25, so it is timed on: one more (1 ms / their median 0.325 ms is
    # 3). 256: 1 + 3 (1 ms / 0.27 ms). Then 64's four more short timings, for the noise.
    assert launches[:101] == [64] * 101, launches
    launches = launches[101:]
    assert launches[:13] == [64] * 5 + [128] * 4 + [256] * 4, launches
    assert launches[13:33] == [64] * 20, launches
    assert full_timed == [64] and winner == 64, (full_timed, winner)

    tuner, launcher, full_timed = driver_timed_tuner(
        monkeypatch, {64: [0.5], 128: [1.1, 1.3], 256: [0.55]}, {64: 0.5, 128: 0.45, 256: 0.52})
    raced(tuner)
    blocks = [launch["BLOCK"] for launch in launcher.launches]
    assert blocks.count(128) == 3, "out-run on both first launches: one untimed, two timed, no more"
    assert 128 not in full_timed


def test_race_audit_times_the_dropped_in_full_too_and_writes_every_configs_timings(tmp_path):
    """WARMUP_HARNESS_RACE_AUDIT: each raced key adds a JSON line with every config's short and full
    timing; the dropped config is timed in full for the audit, and the pick is the race's all the same."""
    from warmup_harness.autotune import race, verdict

    audit = tmp_path / "audit.jsonl"
    tuner, timer = race_tuner({64: list(QUIET), 128: [3.0], 256: [1.01]}, {64: 1.0, 128: 0.5, 256: 1.02})
    winner, _ = raced_with(tuner, race.Racer(lambda line: None, audit=str(audit)))
    assert winner == 64, "the audit changes no pick: 128 was dropped on its short timing"
    assert timer.timed("full") == {64, 128, 256}
    [line] = audit.read_text().splitlines()
    entry = json.loads(line)
    assert entry["kernel"] == f"{__name__}:body" and entry["key"] == "[10]"
    rows = {row["index"]: row for row in entry["configs"]}
    assert {i: (r["short_ms"], r["full_ms"], r["retimed"]) for i, r in rows.items()} == {
        0: (1.0, 1.0, True), 1: (3.0, 0.5, False), 2: (1.01, 1.02, True)}
    assert entry["limit_ms"] == pytest.approx(1.0 * (1 + verdict.NOISE_MARGIN * 0.03))


def test_race_an_audit_file_that_cannot_be_written_is_said_once_and_racing_goes_on(tmp_path):
    from warmup_harness.autotune import race

    lines = []
    tuner, timer = race_tuner({64: list(QUIET), 128: [3.0], 256: [1.01]}, {64: 1.0, 128: 0.5, 256: 1.02})
    winner, _ = raced_with(tuner, race.Racer(lines.append, audit=str(tmp_path / "no-such-folder" / "audit.jsonl")))
    assert winner == 64 and len(lines) == 1 and "cannot add to the audit file" in lines[0], lines


def other(x, n):
    pass


def test_race_a_tuner_with_no_do_bench_that_takes_a_budget_is_timed_in_full_and_said_the_others_race(
        monkeypatch):
    from warmup_harness import triton_private
    from warmup_harness.autotune import race

    monkeypatch.setattr(triton_private, "device_benchmarker", lambda: None)
    plain_calls = []

    def no_budget(kernel_call, quantiles):
        kernel_call()
        plain_calls.append(True)
        return [1.0] * len(quantiles)

    configs = [triton.Config({"BLOCK": b}) for b in (64, 128, 256)]
    unraced = Autotuner(Launcher(other), ["x", "n"], configs, ["n"], None, None, do_bench=no_budget)
    raceable, timer = race_tuner({64: list(QUIET), 128: [3.0], 256: [3.0]}, {64: 1.0, 128: 1.0, 256: 1.0})
    lines = []
    racer = race.Racer(lines.append)
    tuners.install(policies.Recorder(lambda *a: None), racer=racer)
    try:
        for n in (10, 20):
            unraced.run(object(), n)
        raceable.run(object(), 10)
    finally:
        tuners.uninstall()
    assert len(plain_calls) == 6, "each config of each key timed once, in full"
    assert lines == [f"race: {__name__}:other is not raced (no do_bench of its own or of the driver takes a "
                     f"warm-up and a repetition budget): its configs are each timed in full"]
    assert racer.keys == {f"{__name__}:body": {"[10]": {"raced": 3, "retimed": 1, "skipped": 0, "near": [0],
                                                        "winner": 0}}}
    assert timer.timed("full") == {64}


KERNEL = f"{__name__}:body"


def history_meta(keys: dict, device="dev", **more) -> dict:
    """A sidecar whose `race` holds `keys` ({key: entry}) of the race tuner's kernel, made on `device`."""
    return {"device": device, "kernels": {KERNEL: "fp-now"}, "race": {KERNEL: keys}, **more}


@pytest.fixture
def compiled(monkeypatch):
    """The configs (BLOCKs) each key hands the precompiler, in the order given; the kernel's
    fingerprint fixed (the race tuner has no jit function to take one from)."""
    from warmup_harness.autotune import tuner_cache

    seen: list[list[int]] = []
    monkeypatch.setattr(tuners.Hooks, "before_timing",
                        lambda self, tuner, configs, kwargs: seen.append([c.kwargs["BLOCK"] for c in configs]))
    monkeypatch.setattr(tuner_cache, "fingerprint", lambda tuner: "fp-now")
    return seen


def race_keys(tuner, racer, ns, before=lambda n: None) -> list[int]:
    """Records one key per n in `ns` of `tuner` with `racer`, in one session, `before(n)` called before
    each: each key's BLOCK."""
    decided = []
    tuners.install(policies.Recorder(lambda kernel, key, config, seconds, fp:
                                     decided.append(config["kwargs"]["BLOCK"])), racer=racer)
    try:
        for n in ns:
            before(n)
            tuner.run(object(), n)
    finally:
        tuners.uninstall()
    return decided


@pytest.fixture
def holding(monkeypatch):
    """History holding configs back with no variable set, as it will once a device has measured it
    (race_history.HOLD_BY_DEFAULT): the mechanism these tests pin."""
    from warmup_harness.autotune import race_history

    monkeypatch.setattr(race_history, "HOLD_BY_DEFAULT", True)


def test_race_history_without_its_variable_orders_the_race_and_holds_nothing_back(compiled):
    """Holding back is opt-in (WARMUP_HARNESS_RACE_HISTORY=N): unset, the keys of a kernel's history
    order its race and every config is raced; set, the fourth key is pruned."""
    from warmup_harness.autotune import race

    meta = history_meta({k: {"near": [0, 2], "winner": 0} for k in ("[1]", "[2]", "[3]")})
    by_default = race.History(meta, lambda: "dev")
    chosen = race.History(meta, lambda: "dev", keys=3)
    plan = by_default.plan(KERNEL, "[4]", lambda: "fp-now", 3)
    assert plan.why == "order" and not plan.held and plan.order[0] == 0, plan
    assert chosen.plan(KERNEL, "[4]", lambda: "fp-now", 3).why == "audit", "N keys here: the audit, then pruned"


def history(meta=None, device="dev", **settings):
    from warmup_harness.autotune import race

    chosen = race_settings(settings.get)  # the session's reading: no variable set, the defaults
    return race.History(meta, lambda: device, chosen.history, chosen.near)


FAR = {64: list(QUIET), 128: [3.0], 256: [1.1]}  # 128 never near: 64 best, 256 within 20%


def test_race_history_keeps_the_configs_it_rules_out_from_compiling_and_timing(compiled, holding):
    """A record holding 3 keys on this device: the session's first such key is its audit (every
    config), the next is pruned: 128, near on none, is neither compiled nor timed."""
    from warmup_harness.autotune import race

    meta = history_meta({"[1]": {"near": [0], "winner": 0}, "[2]": {"near": [0, 2], "winner": 0},
                         "[3]": {"near": [2, 0], "winner": 2}})
    tuner, timer = race_tuner(FAR, {64: 1.0, 128: 0.5, 256: 1.0})
    racer = race.Racer(lambda line: None, history=history(meta))
    assert race_keys(tuner, racer, (10, 20)) == [64, 64]
    assert compiled == [[256, 64, 128], [64, 256]], "best first: the nearest key's winner, [3]'s then [10]'s"
    assert [(v["history"], v["skipped"]) for v in racer.keys[KERNEL].values()] == [("audit", 0), ("pruned", 1)]
    assert racer.keys[KERNEL]["[10]"]["audit"] == {"missed": []}, "128 lost its audit: history missed nothing"
    assert [b for b, kind in timer.calls].count(128) == 1, "128 timed on the audited key only (out-run: once)"
    for changed, settings, device in (({**meta, "kernels": {KERNEL: "fp-then"}}, {}, "dev"),
                                      (meta, {env.RACE_HISTORY: "4"}, "dev"), (meta, {}, "another"),
                                      (meta, {env.RACE_HISTORY: "0"}, "dev")):
        compiled.clear()
        racer = race.Racer(lambda line: None, history=history(changed, device, **settings))
        race_keys(race_tuner(FAR, {64: 1.0, 128: 0.5, 256: 1.0})[0], racer, (10,))
        assert sorted(compiled[0]) == [64, 128, 256], "another fingerprint, too few keys, another device or off"
        assert racer.keys[KERNEL]["[10]"].get("history") != "audit"


def test_race_the_sessions_own_history_prunes_the_fourth_key_of_a_kernel(compiled, holding):
    """No record, no variable set: the kernel's first 3 keys race every config, the fourth skips the
    config near on none of them, neither compiled nor timed."""
    from warmup_harness.autotune import race

    tuner, timer = race_tuner(FAR, {64: 1.0, 128: 0.5, 256: 1.0})
    racer = race.Racer(lambda line: None, history=history())
    assert race_keys(tuner, racer, (10, 20, 30, 40)) == [64] * 4
    assert compiled[3] == [64, 256], compiled
    assert timer.calls.count((128, "short")) == 3 and (128, "full") not in timer.calls, "once on each of 3 keys"
    entries = racer.keys[KERNEL]
    assert [(v["history"], v["skipped"]) for v in entries.values()] == [("short", 0)] * 3 + [("pruned", 1)]
    assert entries["[40]"]["near"] == [0, 2] and racer.settings == {KERNEL: {"history": 3, "near": 0.2}}
    assert " 1 skipped by history " in racer.summary()


def test_race_an_audited_key_whose_winner_history_held_back_keeps_it_and_widens_the_near_set(compiled, holding):
    from warmup_harness.autotune import race

    meta = history_meta({k: {"near": [0, 2], "winner": 0} for k in ("[1]", "[2]", "[3]")})
    lines = []
    tuner, timer = race_tuner({64: list(QUIET), 128: [0.5], 256: [1.1]}, {64: 1.0, 128: 0.5, 256: 1.0})
    racer = race.Racer(lines.append, history=history(meta))
    assert race_keys(tuner, racer, (10, 20)) == [128, 128], "the audit's true winner, then 128 raced again"
    first, second = racer.keys[KERNEL]["[10]"], racer.keys[KERNEL]["[20]"]
    assert first["history"] == "audit" and first["audit"] == {"missed": [1]} and first["winner"] == 1, first
    assert len(lines) == 1 and "its audit's winner, config 1, came near on none" in lines[0], lines
    assert second["history"] == "all near" and second["skipped"] == 0 and 128 in compiled[1], second


def test_race_order_follows_history_the_nearest_keys_winner_first(compiled):
    """Compiles submitted and short timings taken best first: the nearest key's ([3]) winner, 128,
    then by how many keys each came near on and its place there."""
    from warmup_harness.autotune import race

    meta = history_meta({"[1]": {"near": [2, 1], "winner": 2}, "[2]": {"near": [2, 1, 0], "winner": 2},
                         "[64]": {"near": [1, 2, 0], "winner": 1}})
    tuner, timer = race_tuner({64: [1.0], 128: list(QUIET), 256: [1.05]}, {64: 1.0, 128: 1.0, 256: 1.0})
    racer = race.Racer(lambda line: None, history=history(meta))
    race_keys(tuner, racer, (40,))
    assert compiled == [[128, 256, 64]], compiled
    assert [b for b, kind in timer.calls if kind in ("warm", "short")][:4] == [128, 128, 256, 64], timer.calls


def test_race_another_devices_record_orders_the_race_and_seeds_the_near_set_but_never_decides(compiled, holding):
    from warmup_harness.autotune import race

    h100 = {k: {"near": [2, 0], "winner": 2} for k in ("[1]", "[2]", "[3]", "[4]")}
    tuner, timer = race_tuner({64: list(QUIET), 128: [0.5], 256: [1.1]}, {64: 1.0, 128: 0.5, 256: 1.0})
    racer = race.Racer(lambda line: None, history=history(history_meta(h100, device="H100"), device="H200"))
    assert race_keys(tuner, racer, (10,)) == [128], "raced here: 128, which the H100's record never saw near, wins"
    assert compiled == [[256, 64, 128]] and racer.keys[KERNEL]["[10]"]["history"] == "short", compiled
    # Three keys of this device where 128 is never near, and the H100's where it was: the H100's
    # near set seeds this one, so 128 is not held back.
    mixed = history_meta({**{k: {"near": [0, 2], "winner": 0} for k in ("[1]", "[2]", "[3]")},
                          "[4]": {"near": [1], "winner": 1}}, device="H200",
                         foreign=[{"device": "H100", "triton": None, "keys": {KERNEL: ["[4]"]}}])
    compiled.clear()
    racer = race.Racer(lambda line: None, history=history(mixed, device="H200"))
    race_keys(race_tuner(FAR, {64: 1.0, 128: 0.5, 256: 1.0})[0], racer, (10,))
    assert sorted(compiled[0]) == [64, 128, 256] and racer.keys[KERNEL]["[10]"]["history"] == "all near", compiled


def test_race_history_settings_come_from_the_record_per_kernel_and_one_it_cannot_use_is_said(compiled, holding):
    from warmup_harness.autotune import race

    keys = {"[1]": {"near": [0, 2], "winner": 0}, "[2]": {"near": [0, 2], "winner": 0}}
    lines = []
    two = race.History(history_meta(keys, race_settings={KERNEL: {"history": 2, "near": 0.5}}), lambda: "dev")
    bad = race.History(history_meta(keys, race_settings={KERNEL: {"history": "two", "near": 0.5}}), lambda: "dev",
                       say=lines.append, where="rec/mm.meta.json")
    assert two.plan(KERNEL, "[3]", lambda: "fp-now", 3).why == "audit", "2 keys here are enough for this kernel"
    assert bad.plan(KERNEL, "[3]", lambda: "fp-now", 3).why == "short", "3 keys by default"
    assert bad.near(KERNEL) == 0.5 and bad.recorded_settings(KERNEL) == {"history": 3, "near": 0.5}
    assert lines == [f'race: rec/mm.meta.json: race_settings give {KERNEL} history "two", not a whole number >= 1: '
                     f'3 is used; fix or remove it'], lines


def test_race_a_pruned_key_whose_predicted_winner_falls_behind_races_the_held_configs_after_all(compiled, holding):
    from warmup_harness.autotune import race

    meta = history_meta({k: {"near": [0, 2], "winner": 0} for k in ("[1]", "[2]", "[3]")})
    tuner, timer = race_tuner(FAR, {64: 1.0, 128: 0.5, 256: 1.0})
    racer = race.Racer(lambda line: None, history=history(meta))

    def before(n):
        if n == 20:  # after the session's audit: 64, predicted, 2x behind 256 now
            timer.short.update({64: [2.0], 256: list(QUIET), 128: [0.9]})

    assert race_keys(tuner, racer, (10, 20), before) == [64, 128]
    assert compiled[1:] == [[64, 256], [128]], "the held config compiled once the doubt showed"
    assert racer.keys[KERNEL]["[20]"]["history"] == "doubt" and racer.keys[KERNEL]["[20]"]["skipped"] == 0


def raced_with(tuner, racer):
    decided = []
    tuners.install(policies.Recorder(lambda kernel, key, config, seconds, fp: decided.append(config)), racer=racer)
    try:
        tuner.run(object(), 10)
    finally:
        tuners.uninstall()
    return decided[0]["kwargs"]["BLOCK"], racer


class TimingModel:
    """A do_bench for a device with a timing model: each config's true time `ms[block]`, times
    `factor(block, n, work_ms)` for its n-th short timing (from 0) with `work_ms` of kernels run
    before it (a warm-up's budget, a short timing's 2 ms, a full one's 100); full timings exact."""

    def __init__(self, launcher, ms: dict, factor):
        self.launcher, self.ms, self.factor = launcher, ms, factor
        self.work_ms = 0.0
        self.shorts: dict[int, int] = {}
        self.full: list[int] = []

    def __call__(self, kernel_call, quantiles=None, warmup=None, rep=None):
        from warmup_harness.autotune import brief

        kernel_call()
        block = self.launcher.launches[-1]["BLOCK"]
        if warmup == brief.WARM_MS:
            self.work_ms += warmup
            return [0.0] * len(quantiles)
        if warmup is None:
            self.work_ms += 100
            self.full.append(block)
            return [self.ms[block]] * len(quantiles)
        n = self.shorts[block] = self.shorts.get(block, -1) + 1
        ms = self.ms[block] * self.factor(block, n, self.work_ms)
        self.work_ms += rep
        return [ms] * len(quantiles)


TRUE_MS = {64: 0.9, 128: 1.0, 256: 3.0}  # 64 wins; 128, 10% slower, is the pick to avoid


def modelled(factor, order=(64, 128, 256)) -> tuple[int, TimingModel]:
    """Records one key of a tuner timed on `factor`'s device, its configs in `order`: (the recorded
    BLOCK, the model)."""
    launcher = Launcher(body)
    model = TimingModel(launcher, TRUE_MS, factor)
    tuner = Autotuner(launcher, ["x", "n"], [triton.Config({"BLOCK": b}, num_warps=4) for b in order],
                      ["n"], None, None, do_bench=model)
    return raced(tuner)[0], model


@pytest.mark.parametrize("why, factor, order", [
    ("a cold device: its first 2 ms of kernels three times slower, until the clock ramps up",
     lambda block, n, work_ms: 3.0 if work_ms < 2 else 1.0, (64, 128, 256)),
    ("the winner's first launches slow", lambda block, n, work_ms: 1.5 if (block, n) == (64, 0) else 1.0,
     (64, 128, 256)),
    ("the winner alternating 0.8x and 1.5x, slow first", lambda block, n, work_ms: (1.5, 0.8)[n % 2] if block == 64
     else 1.0, (64, 128, 256)),
    ("the winner's first short timing NaN", lambda block, n, work_ms: math.nan if (block, n) == (64, 0) else 1.0,
     (128, 64, 256)),
    ("the winner's first short timing inf", lambda block, n, work_ms: math.inf if (block, n) == (64, 0) else 1.0,
     (128, 64, 256)),
])
def test_race_a_winner_whose_short_timings_are_noisier_than_the_bests_is_kept(why, factor, order):
    """The race drops a config on its own short timings, never on one sample: the true winner is
    timed in full and wins, whichever way its short timings mislead."""
    winner, model = modelled(factor, order)
    assert winner == 64, f"{why}: the 10%-slower config was recorded; timed in full: {model.full}"
    assert 256 not in model.full, "a config three times slower is still dropped"


def test_race_warms_the_device_on_the_first_config_before_any_short_timing():
    launcher = Launcher(body)
    seen = []

    def factor(block, n, work_ms):
        seen.append((block, work_ms))
        return 1.0

    model = TimingModel(launcher, TRUE_MS, factor)
    tuner = Autotuner(launcher, ["x", "n"], [triton.Config({"BLOCK": b}, num_warps=4) for b in (64, 128, 256)],
                      ["n"], None, None, do_bench=model)
    raced(tuner)
    assert launcher.launches[0]["BLOCK"] == 64 and seen[0] == (64, 25.0), (launcher.launches[:2], seen[:2])


def test_race_a_tuner_whose_run_sets_no_nargs_is_timed_in_full_and_said():
    """The race launches with the arguments `run` names in `tuner.nargs`; a run that names none is
    not raced: every config is handed to it, timed in full, said once."""
    from warmup_harness.autotune import race

    class NoNargs(OwnRunTuner):
        def prune_configs(self, kwargs, *rest):  # no nargs while it prunes, its own _bench's after
            saved, self.nargs = self.nargs, None
            try:
                return super().prune_configs(kwargs, *rest)
            finally:
                self.nargs = saved

    tuner, timer = race_tuner({64: [2.0], 128: list(QUIET), 256: [9.0]}, {64: 1.0, 128: 0.5, 256: 1.0}, cls=NoNargs)
    lines = []
    racer = race.Racer(lines.append)
    tuners.install(policies.Recorder(lambda *a: None), racer=racer)
    try:
        tuner.run(object(), 250)
    finally:
        tuners.uninstall()
    assert timer.timed("full") == {64, 128, 256} and timer.timed("short") == set(), timer.calls
    assert racer.keys == {} and len(lines) == 1 and "is not raced (its run sets no nargs" in lines[0], lines
