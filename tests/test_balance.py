"""Cost-aware sharding end to end: warmup-shard's strategies and its cost file, warmup-costs
learning costs from a finished run, and warmup-spawn running more shards than devices as a pool,
longest expected first. Shape texts are checked against real Python: `json.dumps(shape,
separators=(",", ":"))` of what `yaml.safe_load` gives."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from support import FLAGGEMS_DATA, HANG, ROOT, UNTIMED, clean_env, run_tool, tool

HARNESS = ROOT / "tests" / "harness" / "test_bench.py"


def py_text(shape):
    """The shape text the contract defines, or None where json.dumps raises."""
    try:
        return json.dumps(shape, separators=(",", ":"))
    except (TypeError, ValueError):
        return None


def shard(tmp_path, source: Path, *args, op="mm", out="out", **kw):
    return run_tool("shard", "--op", op, *args, "--out", tmp_path / out, source, **kw)


def plan_of(tmp_path, out="out"):
    return json.loads((tmp_path / out / "plan.json").read_text())


def texts_by_position(plan) -> list:
    """Each shape's text from the plan, in the source's order."""
    found = {}
    for s in plan["shards"]:
        found.update(zip(s["shapes"], s["shape_texts"]))
    return [found[j] for j in range(plan["shapes"])]


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


# --- shape texts against Python -------------------------------------------------------------------

FLAGGEMS_FILES = sorted(FLAGGEMS_DATA.glob("*.yaml"))


@pytest.mark.parametrize("path", FLAGGEMS_FILES, ids=lambda p: p.name)
def test_shape_texts_are_python_json_dumps_of_safe_load_on_real_flaggems_files(tmp_path, path):
    doc = yaml.safe_load(path.read_text())
    ops = [op for op, v in doc.items() if isinstance(op, str) and isinstance(v, dict)
           and isinstance(v.get("shapes"), list) and len(v["shapes"]) >= 2]
    assert ops
    for op in ops:
        r = shard(tmp_path, path, "--shards", "2", op=op, out=op)
        assert r.returncode == 0, r.stderr
        want = [py_text(s) for s in doc[op]["shapes"]]
        assert texts_by_position(plan_of(tmp_path, op)) == want, op


EDGE_SHAPES = """\
mm:
  shapes:
    - [1, 2.5, -0.0, 1.0e+16, 1.0e-5, 1e16, .inf, -.inf, .nan]
    - [0x1F, 017, 0b101, 1_000, 1:30, 1:30.5, 0xffffffffffffffffffffffffffff]
    - [yes, No, ~, null, "é\\t\\"q\\"", "😀", "\\x7f", '017']
    - {<<: {K: 1, 2: x}, M: 8, 1.5: y, true: z, ~: w, 2: v}
    - !!omap [a: 1, b: [2]]
    - !!pairs [a: 1, a: 2]
    - [2001-12-14]
    - [2001-12-14 21:59:43.10 -5]
    - [!!binary aGVsbG8=]
    - !!set {a, b}
    - {2001-12-14: 1}
    - {!!binary aGVsbG8=: 1}
    - [[[]], {}, ""]
"""


def test_values_json_cannot_hold_have_no_text_and_the_rest_match_python(tmp_path):
    src = write(tmp_path, "edge.yaml", EDGE_SHAPES)
    r = shard(tmp_path, src, "--shards", "100")
    assert r.returncode == 0, r.stderr
    shapes = yaml.safe_load(EDGE_SHAPES)["mm"]["shapes"]
    want = [py_text(s) for s in shapes]
    assert want.count(None) == 6  # dates, timestamps, bytes, sets and such keys
    assert texts_by_position(plan_of(tmp_path)) == want


SCALARS = st.one_of(
    st.integers(-(2**80), 2**80), st.floats(allow_nan=True), st.booleans(), st.none(),
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x85\u2028\u2029"),
            max_size=6),
    st.binary(max_size=4), st.dates(),
)
SHAPES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.one_of(st.integers(-3, 3), st.booleans(), st.none(), st.floats(),
                                st.text(max_size=3)), inner, max_size=3),
    max_leaves=8,
)


@settings(UNTIMED, max_examples=60)
@given(shapes=st.lists(SHAPES, min_size=2, max_size=6),
       flow=st.sampled_from([None, False, True]))
def test_generated_shapes_get_the_text_python_gives_them(tmp_path, shapes, flow):
    text = yaml.safe_dump({"mm": {"shapes": shapes}}, default_flow_style=flow, allow_unicode=True)
    src = write(tmp_path, "gen.yaml", text)
    loaded = yaml.safe_load(text)["mm"]["shapes"]
    r = shard(tmp_path, src, "--shards", "100")
    assert r.returncode == 0, r.stderr + text
    assert texts_by_position(plan_of(tmp_path)) == [py_text(s) for s in loaded], text


# YAML 1.1's numbers the way SafeConstructor builds them: base 60 (a float's parts summed from the
# last up, each times float(60 ** i), which rounds differently from Horner's rule in the last bit),
# ints of any size, and dict keys that are equal as Python compares them (an int and the float of
# the same value are one key).
SIGN = st.sampled_from(["", "-", "+"])
SEXAGESIMAL_FLOAT = st.builds(
    lambda sign, head, parts, frac: f"{sign}{head}" + "".join(f":{p:02d}" for p in parts) + f".{frac}",
    SIGN, st.integers(1, 10**6), st.lists(st.integers(0, 59), min_size=1, max_size=14),
    st.text("0123456789", max_size=12))
SEXAGESIMAL_INT = st.builds(
    lambda sign, head, parts: f"{sign}{head}" + "".join(f":{p}" for p in parts),
    SIGN, st.integers(1, 10**30), st.lists(st.integers(0, 59), min_size=1, max_size=30))
TAGGED = st.builds(
    lambda tag, parts: f'!!{tag} "' + ":".join(parts) + '"',
    st.sampled_from(["float", "int"]),
    st.lists(st.sampled_from(["1", "-7", "59", "0", "12345678901234567890", " 3 "]), min_size=2, max_size=8))
BIG = st.builds(lambda sign, n, base: sign + {16: hex, 8: lambda n: "0" + oct(n)[2:], 2: bin, 10: str}[base](n),
                SIGN, st.integers(2**60, 2**200), st.sampled_from([2, 8, 10, 16]))
NUMBER = st.one_of(SEXAGESIMAL_FLOAT, SEXAGESIMAL_INT, TAGGED, BIG)


@settings(UNTIMED, max_examples=80)
@given(numbers=st.lists(st.lists(NUMBER, min_size=1, max_size=4), min_size=2, max_size=5),
       keys=st.lists(st.sampled_from(["1e40", "10000000000000000303786028427003666890752",
                                      "0x1d6329f1c35ca4bfabb9f5610000000000", "1.0e+40", "2:0",
                                      "120", "120.0", "0b1111000", "!!float 2:0"]),
                     min_size=1, max_size=4))
def test_yaml_numbers_get_the_text_python_gives_them(tmp_path, numbers, keys):
    lines = ["mm:", "  shapes:"]
    lines += ["    - [" + ", ".join(shape) + "]" for shape in numbers]
    lines.append("    - {" + ", ".join(f"{k}: {i}" for i, k in enumerate(keys)) + "}")
    text = "\n".join(lines) + "\n"
    src = write(tmp_path, "numbers.yaml", text)
    r = shard(tmp_path, src, "--shards", "100")
    try:
        loaded = yaml.safe_load(text)["mm"]["shapes"]
    except (ValueError, OverflowError):  # e.g. `!!int "0:1"`: int("0:1", 8)
        assert r.returncode == 2, r.stderr + text
        return
    assert r.returncode == 0, r.stderr + text
    assert texts_by_position(plan_of(tmp_path)) == [py_text(s) for s in loaded], text


def test_a_decimal_int_past_pythons_digit_cap_is_refused_as_safe_load_refuses_it(tmp_path):
    ok = "mm:\n  shapes:\n    - [" + "1" * 4300 + "]\n    - [0x" + "f" * 4000 + "]\n"
    bad = "mm:\n  shapes:\n    - [1]\n    - [" + "1" * 4301 + "]\n"
    assert yaml.safe_load(ok)
    with pytest.raises(ValueError):
        yaml.safe_load(bad)
    r = shard(tmp_path, write(tmp_path, "ok.yaml", ok), "--shards", "2")
    assert r.returncode == 0, r.stderr
    # str() of the hex int has more digits than Python writes: json.dumps raises, no text.
    assert texts_by_position(plan_of(tmp_path)) == ["[" + "1" * 4300 + "]", None]
    r = shard(tmp_path, write(tmp_path, "bad.yaml", bad), "--shards", "2", out="bad")
    assert r.returncode == 2, r.stderr
    assert "bad.yaml" in r.stderr and "!!int" in r.stderr
    assert not (tmp_path / "bad").exists()


# --- strategies -----------------------------------------------------------------------------------

SIX = "mm:\n  shapes:\n" + "".join(f"    - [{n}, 2]\n" for n in (1, 9, 2, 3, 4, 1000)) + "  dtype: f16\n"


def loads(plan):
    return [s["expected_cost"] for s in plan["shards"]]


def test_round_robin_stays_the_default_and_the_plan_has_no_costs(tmp_path):
    r = shard(tmp_path, write(tmp_path, "s.yaml", SIX), "--shards", "2")
    assert r.returncode == 0, r.stderr
    plan = plan_of(tmp_path)
    assert plan["strategy"] == "round-robin" and "cost_source" not in plan
    assert [s["shapes"] for s in plan["shards"]] == [[0, 2, 4], [1, 3, 5]]
    assert all("expected_cost" not in s for s in plan["shards"])
    assert plan["shards"][0]["shape_texts"] == ["[1,2]", "[2,2]", "[4,2]"]


def test_lpt_by_a_cost_file_balances_and_gives_missing_shapes_the_median(tmp_path):
    costs = write(tmp_path, "costs.json", json.dumps(
        {"mm": {"[1,2]": 1, "[9,2]": 9, "[2,2]": 2, "[3,2]": 3, "[4,2]": 4, "[7,7]": 50},
         "bmm": {"[1,2]": 99}}))
    r = shard(tmp_path, write(tmp_path, "s.yaml", SIX), "--shards", "2", "--strategy", "lpt",
              "--costs", costs)
    assert r.returncode == 0, r.stderr
    assert "no cost for 1 of op \"mm\"'s 6 shapes" in r.stderr and "median" in r.stderr
    plan = plan_of(tmp_path)
    assert plan["strategy"] == "lpt" and plan["cost_source"] == "file"
    # [1000,2] is missing: median of 1, 9, 2, 3, 4 = 3. LPT: 9 | 4, 3, 3 | 2 onto 9 | 1 onto 10.
    by_shard = {tuple(s["shapes"]): s["shape_costs"] for s in plan["shards"]}
    assert sorted(loads(plan)) == [11, 11]
    assert by_shard == {(1, 2): [9, 2], (0, 3, 4, 5): [1, 3, 4, 3]}
    for s in plan["shards"]:  # every shard file holds its shapes and the op's other keys
        doc = yaml.safe_load((tmp_path / "out" / s["shape_file"]).read_text())
        assert doc["mm"]["dtype"] == "f16"
        assert [py_text(x) for x in doc["mm"]["shapes"]] == s["shape_texts"]


def test_lpt_by_the_product_model_gives_the_largest_product_a_shard_longest_first(tmp_path):
    r = shard(tmp_path, write(tmp_path, "s.yaml", SIX), "--shards", "3", "--strategy", "lpt",
              "--cost-model", "product", "--overhead", "0")
    assert r.returncode == 0, r.stderr
    plan = plan_of(tmp_path)
    assert plan["cost_source"] == "product"
    assert plan["shards"][0]["shapes"] == [5]  # [1000, 2] dwarfs the rest
    assert loads(plan) == sorted(loads(plan), reverse=True)
    total = sum(loads(plan))
    assert math.isclose(total, 6.0)  # products relative to their mean sum to the shape count


def test_the_uniform_model_gives_every_shape_one_unit(tmp_path):
    r = shard(tmp_path, write(tmp_path, "s.yaml", SIX), "--shards", "4", "--strategy", "lpt",
              "--cost-model", "uniform")
    assert r.returncode == 0, r.stderr
    plan = plan_of(tmp_path)
    assert plan["cost_source"] == "uniform" and loads(plan) == [2, 2, 1, 1]


def test_more_shards_than_shapes_gives_one_shape_per_shard_largest_first(tmp_path):
    r = shard(tmp_path, write(tmp_path, "s.yaml", SIX), "--shards", "64", "--strategy", "lpt")
    assert r.returncode == 0, r.stderr
    plan = plan_of(tmp_path)
    assert [s["shapes"] for s in plan["shards"]] == [[5], [1], [4], [3], [2], [0]]


# --- bad cost files -------------------------------------------------------------------------------

BAD_COST_FILES = {
    "not JSON": ('{"mm": {"[1,2]": 1,,}}', "costs.json:1:", "not a JSON cost file"),
    "NaN as Python writes it": ('{"mm": {"[1,2]": NaN}}', "costs.json:1:", "not a JSON cost file"),
    "empty": ("", "costs.json:1:", "not a JSON cost file"),
    "a list": ("[1, 2]", "costs.json:", "the top level is an array"),
    "an op that is a list": ('{"mm": [1]}', 'op "mm"', "not an object of shape costs"),
    "a negative cost": ('{"mm": {"[1,2]": -1}}', 'op "mm", shape [1,2]', "not a cost"),
    "a cost as text": ('{"mm": {"[1,2]": "3"}}', 'op "mm", shape [1,2]', "not a cost"),
    "a null cost": ('{"bmm": {"[1]": null}}', 'op "bmm", shape [1]', "not a cost"),
}


@pytest.mark.parametrize("name", BAD_COST_FILES)
def test_a_bad_cost_file_is_a_clear_error_and_nothing_is_written(tmp_path, name):
    body, place, what = BAD_COST_FILES[name]
    costs = write(tmp_path, "costs.json", body)
    r = shard(tmp_path, write(tmp_path, "s.yaml", SIX), "--shards", "2", "--strategy", "lpt",
              "--costs", costs)
    assert r.returncode == 2, r.stderr
    assert "costs.json" in r.stderr and place in r.stderr and what in r.stderr, r.stderr
    assert "fix it" in r.stderr or "give seconds" in r.stderr, r.stderr
    assert not (tmp_path / "out").exists() and r.stdout == ""


@pytest.mark.parametrize("kind", ["missing", "a folder"])
def test_a_cost_file_that_cannot_be_read_is_a_clear_error(tmp_path, kind):
    costs = tmp_path / "costs.json"
    if kind == "a folder":
        costs.mkdir()
    r = shard(tmp_path, write(tmp_path, "s.yaml", SIX), "--shards", "2", "--strategy", "lpt",
              "--costs", costs)
    assert r.returncode == 2 and "cost file" in r.stderr and str(costs) in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


def test_a_bad_cost_file_leaves_an_earlier_runs_scratch_as_it_was(tmp_path):
    src = write(tmp_path, "s.yaml", SIX)
    assert shard(tmp_path, src, "--shards", "2").returncode == 0
    before = {p: p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()}
    costs = write(tmp_path, "costs.json", '{"mm": {"[1,2]": -5}}')
    r = shard(tmp_path, src, "--shards", "3", "--strategy", "lpt", "--costs", costs)
    assert r.returncode == 2
    after = {p: p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()}
    assert after == before


# --- warmup-costs ---------------------------------------------------------------------------------

def fake_run(tmp_path, seconds: dict, *shard_args, interrupted: tuple = ()) -> Path:
    """A scratch as a finished run leaves it: warmup-shard's plan, and a status.json per shard
    as warmup-spawn writes it, with the given wall seconds (shard index -> seconds; None:
    failed); the shards in `interrupted` were stopped by a signal to warmup-spawn."""
    src = write(tmp_path, "s.yaml", SIX)
    r = shard(tmp_path, src, *shard_args)
    assert r.returncode == 0, r.stderr
    for i, secs in seconds.items():
        w = tmp_path / "out" / f"w{i}"
        (w / "status.json").write_text(json.dumps({
            "shard": i, "device": "0", "pid": 100 + i, "exit_code": 0 if secs is not None else 1,
            "signal": None, "signal_name": None, "timed_out": False,
            "interrupted": i in interrupted, "started_at": "2024-01-01T00:00:00.000Z",
            "seconds": secs or 1.0, "argv": ["pytest"], "env": {"set": {}, "unset": []},
            "log": str(w / "worker.log")}))
    return tmp_path / "out"


def test_costs_of_lone_shapes_are_their_shards_time_less_the_start_up(tmp_path):
    scratch = fake_run(tmp_path, {i: 2.0 + i for i in range(6)}, "--shards", "6", "--strategy", "lpt")
    costs = tmp_path / "costs.json"
    r = run_tool("costs", "--costs", costs, "--startup", "1.5", scratch)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(costs)
    plan = plan_of(tmp_path)
    want = {s["shape_texts"][0]: 0.5 + s["index"] for s in plan["shards"]}
    assert json.loads(costs.read_text()) == {"mm": want}
    assert "6 measured alone" in r.stderr


def test_costs_of_shared_shards_are_split_as_the_plan_expected_and_kept_ops_stay(tmp_path):
    scratch = fake_run(tmp_path, {0: 7.0, 1: 5.0}, "--shards", "2")  # round-robin: no expectations
    costs = write(tmp_path, "costs.json", json.dumps({"bmm": {"[1]": 4.0}, "mm": {"[1,2]": 9.0}}))
    r = run_tool("costs", "--costs", costs, "--startup", "1", scratch)
    assert r.returncode == 0, r.stderr
    got = json.loads(costs.read_text())
    assert list(got) == ["bmm", "mm"] and got["bmm"] == {"[1]": 4.0}
    # Shard 0 held [1,2] [2,2] [4,2]: (7 - 1) / 3 each; shard 1 the other three: (5 - 1) / 3.
    assert got["mm"] == pytest.approx({"[1,2]": 2.0, "[2,2]": 2.0, "[4,2]": 2.0,
                                       "[9,2]": 1.333, "[3,2]": 1.333, "[1000,2]": 1.333})
    assert "6 split from shards of several" in r.stderr


def test_failed_shards_teach_nothing_and_no_good_shard_writes_nothing(tmp_path):
    scratch = fake_run(tmp_path, {0: None}, "--shards", "2")
    costs = tmp_path / "costs.json"
    r = run_tool("costs", "--costs", costs, scratch)
    assert r.returncode == 3, r.stderr
    assert "shard 0 failed" in r.stderr and "shard 1 did not run" in r.stderr
    assert not costs.exists()


def test_a_shard_that_exits_0_when_stopped_teaches_nothing(tmp_path):
    """A child that exits 0 on warmup-spawn's SIGTERM was cut short: `stopped`, not `ok`."""
    scratch = fake_run(tmp_path, {0: 9.0, 1: 2.0}, "--shards", "2", interrupted=(0,))
    costs = tmp_path / "costs.json"
    r = run_tool("costs", "--costs", costs, scratch)
    assert r.returncode == 0, r.stderr
    assert "shard 0 was stopped: its shapes keep the costs they had" in r.stderr
    plan = plan_of(tmp_path)
    assert set(json.loads(costs.read_text())["mm"]) == set(plan["shards"][1]["shape_texts"])


@pytest.mark.parametrize("bad", ["[1]", '{"mm": {"[1,2]": -1}}', "{"])
def test_warmup_costs_refuses_a_bad_cost_file_and_leaves_it_as_it_was(tmp_path, bad):
    scratch = fake_run(tmp_path, {0: 1.0, 1: 1.0}, "--shards", "2")
    costs = write(tmp_path, "costs.json", bad)
    r = run_tool("costs", "--costs", costs, scratch)
    assert r.returncode == 2 and "costs.json" in r.stderr, r.stderr
    assert costs.read_text() == bad
    # No temporary left; the update lock's file stays (removing it would break the lock).
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == [".costs.json.lock"]


def test_two_runs_updating_one_cost_file_at_once_keep_both_ops(tmp_path):
    """Read, merge and rename happen under the update lock: neither run loses the other's op."""
    src = write(tmp_path, "s.yaml", SIX + SIX.replace("mm:", "bmm:"))
    scratches = []
    for op in ("mm", "bmm"):
        r = shard(tmp_path, src, "--shards", "2", op=op, out=op)
        assert r.returncode == 0, r.stderr
        for i in range(2):
            w = tmp_path / op / f"w{i}"
            (w / "status.json").write_text(json.dumps({
                "shard": i, "device": "0", "pid": 1, "exit_code": 0, "signal": None,
                "signal_name": None, "timed_out": False, "interrupted": False,
                "started_at": "2024-01-01T00:00:00.000Z", "seconds": 3.0 + i,
                "argv": ["pytest"], "env": {"set": {}, "unset": []},
                "log": str(w / "worker.log")}))
        scratches.append(tmp_path / op)
    costs = tmp_path / "costs.json"
    for attempt in range(25):
        costs.unlink(missing_ok=True)
        runs = [subprocess.Popen([tool("costs"), "--costs", str(costs), str(s)], env=clean_env(),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                for s in scratches]
        for run in runs:
            _, err = run.communicate(timeout=HANG)
            assert run.returncode == 0, err
        got = json.loads(costs.read_text())
        assert sorted(got) == ["bmm", "mm"], (attempt, got)
        assert all(len(got[op]) == 6 for op in got), (attempt, got)


def test_extreme_times_and_plan_costs_are_saturated_not_learned_as_0(tmp_path):
    scratch = fake_run(tmp_path, {0: 1e306, 1: 4.0}, "--shards", "2")
    plan = json.loads((scratch / "plan.json").read_text())
    plan["shards"][1]["shape_costs"] = [1e308] * len(plan["shards"][1]["shapes"])
    (scratch / "plan.json").write_text(json.dumps(plan))
    costs = tmp_path / "costs.json"
    r = run_tool("costs", "--costs", costs, scratch)
    assert r.returncode == 0, r.stderr
    assert "shard 0 took 1e306 s, more than a cost file holds: counted as 1e12 s" in r.stderr
    got = json.loads(costs.read_text())["mm"]
    texts = [s["shape_texts"] for s in plan["shards"]]
    assert [got[t] for t in texts[0]] == [pytest.approx(1e12 / 3)] * 3
    assert [got[t] for t in texts[1]] == [pytest.approx(4 / 3, abs=1e-3)] * 3
    # What warmup-costs wrote, warmup-shard reads, and its plan holds numbers only.
    r = shard(tmp_path, write(tmp_path, "s.yaml", SIX), "--shards", "2", "--strategy", "lpt",
              "--costs", costs, out="next")
    assert r.returncode == 0, r.stderr
    assert all(isinstance(s["expected_cost"], float) for s in plan_of(tmp_path, "next")["shards"])


def test_a_negative_plan_cost_is_refused_before_any_cost_is_written(tmp_path):
    scratch = fake_run(tmp_path, {0: 1.0, 1: 1.0}, "--shards", "2", "--cost-model", "uniform")
    plan = json.loads((scratch / "plan.json").read_text())
    plan["shards"][0]["shape_costs"][0] = -5
    (scratch / "plan.json").write_text(json.dumps(plan))
    r = run_tool("costs", "--costs", tmp_path / "c.json", scratch)
    assert r.returncode == 2 and "shard 0's \"shape_costs\" holds -5, not a cost" in r.stderr
    assert not (tmp_path / "c.json").exists()


@pytest.mark.parametrize(("args", "needle"), [
    (["--overhead", "1e308"], "give a number from 0 to 1e12"),
    (["--costs", "huge.json"], "1e+308 is not a cost: give seconds as a number from 0 to 1e12"),
])
def test_warmup_shard_refuses_costs_whose_sums_would_not_be_numbers(tmp_path, args, needle):
    write(tmp_path, "huge.json", json.dumps({"mm": {"[1,2]": 1e308, "[9,2]": 1e308}}))
    r = shard(tmp_path, write(tmp_path, "s.yaml", SIX), "--shards", "2", "--strategy", "lpt",
              *[str(tmp_path / a) if a.endswith(".json") else a for a in args])
    assert r.returncode == 2 and needle in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


def test_a_symlinked_cost_file_is_updated_through_the_link(tmp_path):
    scratch = fake_run(tmp_path, {0: 2.0, 1: 3.0}, "--shards", "2")
    (tmp_path / "shared").mkdir()
    real = write(tmp_path / "shared", "costs.json", json.dumps({"bmm": {"[1]": 4.0}}))
    link = tmp_path / "costs.json"
    link.symlink_to("shared/costs.json")
    r = run_tool("costs", "--costs", link, scratch)
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and link.readlink() == Path("shared/costs.json")
    assert sorted(json.loads(real.read_text())) == ["bmm", "mm"]
    assert (tmp_path / "shared" / ".costs.json.lock").exists()


def test_warmup_costs_needs_a_plan_with_shape_texts(tmp_path):
    r = run_tool("costs", "--costs", tmp_path / "c.json", tmp_path)
    assert r.returncode == 2 and "no plan.json" in r.stderr, r.stderr
    scratch = fake_run(tmp_path, {0: 1.0, 1: 1.0}, "--shards", "2")
    plan = json.loads((scratch / "plan.json").read_text())
    for s in plan["shards"]:
        del s["shape_texts"]
    (scratch / "plan.json").write_text(json.dumps(plan))
    r = run_tool("costs", "--costs", tmp_path / "c.json", scratch)
    assert r.returncode == 2 and "older warmup-shard" in r.stderr, r.stderr
    assert not (tmp_path / "c.json").exists()


# --- the pool -------------------------------------------------------------------------------------

PROBE = (
    "import json, os, sys, time; t0 = time.time(); time.sleep(0.2); "
    "open(os.environ['PROBE_LOG'], 'a').write(json.dumps({'shape_file': sys.argv[-1], "
    "'device': os.environ['CUDA_VISIBLE_DEVICES'], 'start': t0, 'end': time.time()}) + '\\n')"
)


def test_more_shards_than_devices_run_as_a_pool_longest_expected_first(tmp_path):
    expected = [3.0, 6.0, 1.0, 5.0, 2.0, 4.0]  # out of order on purpose
    shards = []
    for i, cost in enumerate(expected):
        (tmp_path / f"w{i}").mkdir()
        (tmp_path / f"w{i}" / "shapes.yaml").write_text(f"mm:\n  shapes:\n    - [{i}]\n")
        shards.append({"index": i, "shape_file": f"w{i}/shapes.yaml", "shapes": [i],
                       "shape_texts": [f"[{i}]"], "shape_costs": [cost], "expected_cost": cost})
    (tmp_path / "plan.json").write_text(json.dumps(
        {"version": 1, "op": "mm", "source": "/s.yaml", "strategy": "lpt", "cost_source": "file",
         "shapes": 6, "shards": shards}))
    log = tmp_path / "probe.jsonl"
    r = run_tool("spawn", "--plan", tmp_path / "plan.json", "--backend", "cuda",
                 "--devices", "0", "--", sys.executable, "-c", PROBE, env={"PROBE_LOG": str(log)})
    assert r.returncode == 0, r.stderr
    runs = sorted((json.loads(line) for line in log.read_text().splitlines()),
                  key=lambda x: x["start"])
    started = [expected[int(Path(x["shape_file"]).parent.name[1:])] for x in runs]
    assert started == [6.0, 5.0, 4.0, 3.0, 2.0, 1.0]


def test_the_pool_never_runs_two_children_on_one_device(tmp_path):
    r = shard(tmp_path, write(tmp_path, "s.yaml", SIX), "--shards", "6", "--strategy", "lpt")
    assert r.returncode == 0, r.stderr
    log = tmp_path / "probe.jsonl"
    r = run_tool("spawn", "--plan", tmp_path / "out" / "plan.json", "--backend", "cuda",
                 "--devices", "a,b", "--", sys.executable, "-c", PROBE, env={"PROBE_LOG": str(log)})
    assert r.returncode == 0, r.stderr
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(runs) == 6 and {x["device"] for x in runs} == {"a", "b"}
    for device in ("a", "b"):
        mine = sorted((x["start"], x["end"]) for x in runs if x["device"] == device)
        assert all(end <= nxt for (_, end), (nxt, _) in zip(mine, mine[1:])), mine


# --- the whole loop, with the fixture harness ---------------------------------------------------

def test_a_pool_run_teaches_costs_that_the_next_lpt_run_balances_by(tmp_path):
    shapes = [[1, 1], [2, 2], [3, 3], [4, 4]]
    src = write(tmp_path, "s.yaml", yaml.safe_dump({"mm": {"shapes": shapes}}))
    profile = write(tmp_path, "profile.json", json.dumps({"[4,4]": 1.0}))
    r = shard(tmp_path, src, "--shards", "4", "--strategy", "lpt", "--cost-model", "uniform")
    assert r.returncode == 0, r.stderr
    env = {"FLAGGEMS_PERF_CURRENT_OP": "mm", "WARMUP_FIXTURE_COST_PROFILE": str(profile),
           "WARMUP_FIXTURE_SWEEP_SECONDS": "0", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    r = run_tool("spawn", "--plan", tmp_path / "out" / "plan.json", "--backend", "cuda",
                 "--devices", "0,1", "--", sys.executable, "-m", "pytest", "-q", "-p",
                 "no:cacheprovider", HARNESS, "--shape_file", src, env=env, timeout=HANG)
    assert r.returncode == 0, r.stderr
    costs = tmp_path / "costs.json"
    r = run_tool("costs", "--costs", costs, tmp_path / "out")
    assert r.returncode == 0, r.stderr
    learned = json.loads(costs.read_text())["mm"]
    assert set(learned) == {py_text(s) for s in shapes}
    assert learned["[4,4]"] >= 1.0  # its child slept a second for it; start-up only adds
    r = shard(tmp_path, src, "--shards", "2", "--strategy", "lpt", "--costs", costs, out="next")
    assert r.returncode == 0, r.stderr
    plan = plan_of(tmp_path, "next")
    assert plan["cost_source"] == "file"
    assert sum(s["expected_cost"] for s in plan["shards"]) == pytest.approx(sum(learned.values()))


# --- the split with no history: the worst case over the family of profiles ---------------------

# The contract's family for the robust model: a shape's cost is P ** a, P the product of its
# numbers, for each a of POWERS; or, the shapes ranked by P, the r-th of n costs
# exp(sigma * probit((r + 0.5) / n)) for each sigma of TAILS, equal products sharing the mean.
POWERS = [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5]
TAILS = [0.5, 1.0]


def family(products: list[float]) -> list[tuple[str, list[float]]]:
    """Each profile of the family, by name, as each shape's cost."""
    import statistics

    top = max(products)
    out = [(f"P ** {a}", [(p / top) ** a for p in products]) for a in POWERS]
    n = len(products)
    order = sorted(range(n), key=lambda j: (products[j], j))
    for sigma in TAILS:
        quantile = [math.exp(sigma * statistics.NormalDist().inv_cdf((r + 0.5) / n)) for r in range(n)]
        cost = [0.0] * n
        r = 0
        while r < n:
            end = r
            while end < n and products[order[end]] == products[order[r]]:
                end += 1
            for j in order[r:end]:
                cost[j] = statistics.fmean(quantile[r:end])
            r = end
        out.append((f"log-normal tail, sigma {sigma}", cost))
    return out


def generated_shapes() -> list[list[int]]:
    """A second shape set: 64 seeded [B, M, N, K] shapes, powers of two, batch 1 to 16."""
    import random

    rng = random.Random(16)
    return [[rng.choice([1, 2, 4, 8, 16])] + [2 ** rng.randint(5, 14) for _ in range(3)]
            for _ in range(64)]


def bench_shapes() -> list[list[int]]:
    from bench.bench_balance import shapes

    return shapes()


def worst_efficiency(plan) -> tuple[float, str]:
    """The plan's worst efficiency (ideal / makespan, ideal = max(total / k, largest shape))
    over the family, each shard's load computed from the shapes it holds; and under which
    profile."""
    products = [0.0] * plan["shapes"]
    shard_of = [0] * plan["shapes"]
    for i, s in enumerate(plan["shards"]):
        for j, t in zip(s["shapes"], s["shape_texts"]):
            products[j] = math.prod(abs(v) for v in json.loads(t))
            shard_of[j] = i
    k = len(plan["shards"])
    worst = (2.0, "")
    for name, cost in family(products):
        loads = [0.0] * k
        for j, c in enumerate(cost):
            loads[shard_of[j]] += c
        worst = min(worst, (max(sum(cost) / k, max(cost)) / max(loads), name))
    return worst


SHAPE_SETS = {"bench": bench_shapes, "generated": generated_shapes}


def split_worst(tmp_path, src, shards, *args):
    out = f"k{shards}" + "".join(args)
    r = shard(tmp_path, src, "--shards", shards, "--strategy", "lpt", *args, out=out)
    assert r.returncode == 0, r.stderr
    return plan_of(tmp_path, out)


@pytest.mark.parametrize("shape_set", SHAPE_SETS)
def test_with_no_history_the_split_reaches_085_of_ideal_on_every_profile_of_the_family(
        tmp_path, shape_set):
    shapes = SHAPE_SETS[shape_set]()
    src = write(tmp_path, "s.yaml", yaml.safe_dump({"mm": {"shapes": shapes}}))
    product = []
    for shards in (4, 8):
        plan = split_worst(tmp_path, src, shards)
        assert plan["cost_source"] == "robust"
        assert sorted(j for s in plan["shards"] for j in s["shapes"]) == list(range(len(shapes)))
        eff, a = worst_efficiency(plan)
        assert eff >= 0.85, f"{shards} shards: {eff:.3f} under {a}"
        product.append(worst_efficiency(split_worst(tmp_path, src, shards, "--cost-model",
                                                    "product")))
    # The check can fail: LPT by the product model misses it at 4 or 8 shards.
    assert min(product)[0] < 0.85, product


def test_the_robust_split_is_deterministic_and_fast_for_thousands_of_shapes(tmp_path):
    import random

    rng = random.Random(3)
    shapes = [[rng.randint(1, 64), rng.randint(1, 8192), rng.randint(1, 8192)] for _ in range(3000)]
    src = write(tmp_path, "s.yaml", yaml.safe_dump({"mm": {"shapes": shapes}}))
    plans = []
    for out in ("a", "b"):
        r = shard(tmp_path, src, "--shards", "8", "--strategy", "lpt", out=out)
        assert r.returncode == 0, r.stderr
        plans.append([s["shapes"] for s in plan_of(tmp_path, out)["shards"]])
    assert plans[0] == plans[1]
    assert worst_efficiency(plan_of(tmp_path, "a"))[0] >= 0.95
