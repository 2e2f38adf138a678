"""warmup-merge against Python itself: record sets written by Python's json.dump, merged by the
tool, compared byte for byte with the plugin's merge rule re-implemented here and written by
json.dumps(..., indent=2, ensure_ascii=False) + "\\n"; conflicts checked with Python's ==.
"""

from __future__ import annotations

import json
import math
import random
import struct
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from support import UNTIMED, run_tool


def dump(obj) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def utf8(text: str) -> bytes:
    """`text` as a file holds it. A lone surrogate, which json.loads keeps in a str and UTF-8
    cannot carry, becomes its \\udxxx escape: inside a JSON string, the same str again."""
    return text.encode("utf-8", "backslashreplace")


def plugin_buckets(paths: list[Path]):
    """(path, kernel, bucket) for every bucket the plugin's `_merge` took, in order: inputs
    json.loads cannot read, or that are not objects, and buckets that are not dicts skipped."""
    for p in paths:
        try:
            data = json.loads(p.read_text())
        except Exception:
            continue
        if not isinstance(data, dict):
            continue
        for kernel, bucket in data.items():
            if isinstance(bucket, dict):
                yield p, kernel, bucket


def python_merge(paths: list[Path]):
    """The plugin's rule: first value of a key wins in input order; unreadable inputs and
    buckets that are not objects are skipped. Also lists the conflicts as the tool does."""
    merged: dict = {}
    kept_from: dict = {}
    conflicts: list = []
    by_key: dict = {}
    for p, kernel, bucket in plugin_buckets(paths):
        tgt = merged.setdefault(kernel, {})
        for key, cfg in bucket.items():
            if key in tgt:
                if tgt[key] != cfg:
                    if (kernel, key) not in by_key:
                        by_key[(kernel, key)] = {
                            "kernel": kernel,
                            "key": key,
                            "kept": {"input": str(kept_from[(kernel, key)]), "shard": None,
                                     "value": tgt[key]},
                            "differing": [],
                        }
                        conflicts.append(by_key[(kernel, key)])
                    by_key[(kernel, key)]["differing"].append(
                        {"input": str(p), "shard": None, "value": cfg})
                continue
            tgt[key] = cfg
            kept_from[(kernel, key)] = p
    return merged, conflicts


def check_merge(tmp: Path, paths: list[Path]):
    out, conf = tmp / "merged.json", tmp / "conflicts.json"
    out.unlink(missing_ok=True)
    conf.unlink(missing_ok=True)
    res = run_tool("merge", "-o", out, "--conflicts", conf, *paths)
    merged, conflicts = python_merge(paths)
    total = sum(len(b) for b in merged.values())
    if total == 0:
        assert res.returncode == 3, res.stderr
        assert not out.exists() and not conf.exists()
        return res
    assert res.returncode == 0, res.stderr
    assert res.stdout == ""
    assert out.read_bytes() == utf8(dump(merged))
    assert conf.read_bytes() == utf8(dump(conflicts))
    return res


# -- a seeded generator covering the awkward corners ------------------------------------------

ODD_TEXT = ["plain", "é", "日本", "😀 astral", "\u2028 line sep", "\u2029", "\x7f del",
            "tab\tnl\nquote\"back\\", "\x00\x01\x1f", "/slash", "", "\ufeff bom inside"]


def random_float(rng: random.Random) -> float:
    pick = rng.random()
    if pick < 0.3:
        return struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
    if pick < 0.5:
        return rng.choice([0.0, -0.0, math.nan, math.inf, -math.inf, 1e16, 1e-5, 1e-4,
                           9999999999999998.0, 5e-324, 1.7976931348623157e308, 0.1, 100.0])
    return rng.uniform(-1, 1) * 10.0 ** rng.randint(-320, 308)


def random_value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(9 if depth < 3 else 7)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, 1, -1, 2**53 + 1, -(2**64), 10**80, rng.randint(-10**6, 10**6)])
    if kind in (3, 4):
        return random_float(rng)
    if kind == 5:
        return rng.choice(ODD_TEXT) + str(rng.randint(0, 3))
    if kind == 6:
        return rng.choice([1, 1.0, True, 0, -0.0, False, [math.nan], {"n": math.nan}, math.nan])
    if kind == 7:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(ODD_TEXT) + str(i): random_value(rng, depth + 1)
            for i in range(rng.randint(0, 4))}


def random_record(rng: random.Random) -> dict:
    record = {}
    for k in rng.sample(range(6), rng.randint(0, 5)):
        kernel = f"kernel_{k}_" + rng.choice(ODD_TEXT)
        keys = rng.sample(range(40), rng.randint(0, 25))
        record[kernel] = {f"({key}, 'fp16')": random_value(rng) for key in keys}
    return record


def test_random_record_sets_merge_byte_for_byte(tmp_path):
    rng = random.Random(20240611)
    for round_ in range(25):
        paths = []
        for i in range(rng.randint(1, 6)):
            p = tmp_path / f"r{round_}_{i}.json"
            with open(p, "w") as f:
                json.dump(random_record(rng), f)
            paths.append(p)
        check_merge(tmp_path, paths)


def test_floats_of_every_magnitude_keep_python_repr(tmp_path):
    rng = random.Random(7)
    floats = [random_float(rng) for _ in range(20000)]
    # Exact halfway cases: Python's repr breaks the tie towards an even last digit.
    floats += [rng.randint(2**40, 2**56) / 2 ** rng.randint(1, 4) for _ in range(20000)]
    floats += [float(f"{x}e{e}") for e in range(-330, 310) for x in ("1", "1.5", "9.999999999999999")]
    p = tmp_path / "floats.json"
    p.write_text(json.dumps({"k": {str(i): f for i, f in enumerate(floats)}}))
    check_merge(tmp_path, [p])


def test_python_equality_decides_conflicts(tmp_path):
    a = {"k": {"int_float": 1, "bool_int": True, "big": 2**53 + 1, "nan": math.nan,
               "nan_list": [math.nan], "nan_dict": {"x": math.nan}, "order": {"a": 1, "b": 2},
               "zero": 0, "list": [1, 2]}}
    b = {"k": {"int_float": 1.0, "bool_int": 1, "big": 9007199254740992.0, "nan": math.nan,
               "nan_list": [math.nan], "nan_dict": {"x": math.nan}, "order": {"b": 2, "a": 1},
               "zero": -0.0, "list": [2, 1]}}
    paths = []
    for name, rec in (("a", a), ("b", b)):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(rec))
    check_merge(tmp_path, paths)
    conflicts = json.loads((tmp_path / "conflicts.json").read_text())
    assert [c["key"] for c in conflicts] == ["big", "nan", "list"]


def test_duplicate_keys_and_empty_buckets_follow_python(tmp_path):
    p = tmp_path / "dup.json"
    p.write_text('{"k": {"a": 1, "b": 2, "a": 3}, "empty": {}, "k": {"a": 4, "c": 5}}')
    q = tmp_path / "more.json"
    q.write_text('{"empty": {}, "k": {"a": 1, "c": 5}}')
    check_merge(tmp_path, [p, q])


def test_big_ints_past_pythons_digit_limit_are_skipped(tmp_path):
    ok, too_big = tmp_path / "ok.json", tmp_path / "big.json"
    ok.write_text('{"k": {"a": %s}}' % ("7" * 4300))
    too_big.write_text('{"k": {"b": %s}}' % ("7" * 4301))
    res = check_merge(tmp_path, [ok, too_big])
    assert "big.json:1:13: integer with 4301 digits" in res.stderr


def test_torn_missing_and_wrongly_shaped_inputs_are_skipped_with_a_message(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"k": {"a": 1}}))
    torn = tmp_path / "torn.json"
    torn.write_text(json.dumps({"k": {"a": 2, "b": 3}}, indent=2)[:-9])
    array = tmp_path / "array.json"
    array.write_text("[1, 2]")
    bucket = tmp_path / "bucket.json"
    bucket.write_text('{"k": {"c": 4}, "bad": "x"}')
    missing = tmp_path / "missing.json"
    res = check_merge(tmp_path, [good, torn, array, missing, bucket])
    err = res.stderr
    assert f"{torn}:" in err and "cut off" in err
    assert f"{array}: top level is an array" in err
    assert f"{missing}: cannot read" in err
    assert f'{bucket}: kernel "bad" holds a string' in err
    assert "2 input(s) read, 3 skipped" in err
    strict = run_tool("merge", "--strict", "-o", tmp_path / "s.json", good, torn)
    assert strict.returncode == 2 and not (tmp_path / "s.json").exists()


def test_lone_surrogates_are_merged_as_python_merges_them(tmp_path):
    # json.loads keeps a lone surrogate in its str and the plugin's merge keeps it like any
    # other value: in kernel names, keys and configs, compared by ==.
    a = tmp_path / "a.json"
    a.write_text(r'{"k\ud800": {"a": "\ud800", "b": 1}, "j": {"\udc00x": [1, "\uDBFF"]}}')
    b = tmp_path / "b.json"
    b.write_text(r'{"k\ud800": {"a": "\udc00", "b": 1, "c": "\ud800\udc00"}, "j": {}}')
    check_merge(tmp_path, [a, b])
    merged, conflicts = python_merge([a, b])
    assert json.loads((tmp_path / "merged.json").read_text()) == merged
    assert [c["key"] for c in conflicts] == ["a"]
    published = run_tool("publish", "--record-dir", tmp_path / "rec", tmp_path / "merged.json")
    assert published.returncode == 0, published.stderr
    assert json.loads((tmp_path / "rec" / "default.json").read_text()) == merged


def test_a_scratch_folder_is_read_in_shard_order(tmp_path):
    scratch = tmp_path / "run"
    shards = [{"k": {"a": i, f"only{i}": i}} for i in range(3)]
    plan = {"version": 1, "op": "mm", "source": "/s.yaml", "strategy": "round-robin",
            "shapes": 3, "shards": []}
    for i, rec in enumerate(shards):
        (scratch / f"w{i}" / "rec").mkdir(parents=True)
        (scratch / f"w{i}" / "rec" / "mm.json").write_text(json.dumps(rec))
        plan["shards"].append({"index": i, "shape_file": f"w{i}/shapes.yaml", "shapes": [i]})
    (scratch / "plan.json").write_text(json.dumps(plan))
    res = run_tool("merge", scratch, "--conflicts", tmp_path / "c.json")
    assert res.returncode == 0, res.stderr
    paths = [scratch / f"w{i}" / "rec" / "mm.json" for i in range(3)]
    merged, conflicts = python_merge(paths)
    assert res.stdout == dump(merged)
    for c in conflicts:
        c["kept"]["shard"] = 0
        for d, shard in zip(c["differing"], (1, 2)):
            d["shard"] = shard
    assert (tmp_path / "c.json").read_text() == dump(conflicts)


def test_a_by_key_child_without_a_record_is_said_to_have_tuned_no_key_not_to_be_unreadable(tmp_path):
    """Issue 42: by key, a child that claimed no key records nothing; its skip line says so, not
    `cannot read ... No such file`. A shape-mode shard without a record is still unreadable."""
    scratch = tmp_path / "run"
    assert run_tool("shard", "--op", "mm", "--by-key", "--shards", "2", "--out", scratch).returncode == 0
    (scratch / "w0" / "rec").mkdir(parents=True)
    (scratch / "w0" / "rec" / "mm.json").write_text(json.dumps({"k": {"a": 1}}))
    res = run_tool("merge", scratch)
    assert res.returncode == 0 and res.stdout == dump({"k": {"a": 1}}), res.stderr
    missing = scratch / "w1" / "rec" / "mm.json"
    assert (f"{missing}: no record: by key, shard 1 tuned no key (another child claimed each it met) or ended "
            f"before recording one; skipped (shard 1: see") in res.stderr, res.stderr
    assert "No such file" not in res.stderr, res.stderr


def test_keys_carried_under_a_stale_fingerprint_are_left_out_and_the_running_one_is_published(tmp_path):
    """Issue 29 item 10: shard 1 carried kernel k's keys under the fingerprint it had before it
    changed, unconfirmed by any running kernel (its sidecar's `unchecked`), while shard 0 ran k and
    tuned it as it is now: the merge keeps shard 0's keys of k alone, with no conflict, and the
    published fingerprint is the one that ran."""
    scratch = tmp_path / "run"
    plan = {"version": 1, "op": "mm", "source": "/s.yaml", "strategy": "round-robin", "shapes": 2, "shards": []}
    cfg = {"kwargs": {"BLOCK": 64}}
    shards = [({"k": {"a": {"kwargs": {"BLOCK": 128}}}, "j": {"x": cfg}}, {"k": "new", "j": "jj"}, []),
              ({"k": {"a": cfg, "b": cfg}, "j": {"y": cfg}}, {"k": "old", "j": "jj"}, ["k"])]
    for i, (rec, kernels, unchecked) in enumerate(shards):
        (scratch / f"w{i}" / "rec").mkdir(parents=True)
        (scratch / f"w{i}" / "rec" / "mm.json").write_text(json.dumps(rec))
        meta = {"format": "warmup-harness-meta", "version": 2, "op": "mm", "device": "NVIDIA H200",
                "triton": "3.6.0", "tune_seconds": {k: {key: 1.0 for key in keys} for k, keys in rec.items()},
                "kernels": kernels, **({"unchecked": unchecked} if unchecked else {})}
        (scratch / f"w{i}" / "rec" / "mm.meta.json").write_text(json.dumps(meta))
        plan["shards"].append({"index": i, "shape_file": f"w{i}/shapes.yaml", "shapes": [i]})
    (scratch / "plan.json").write_text(json.dumps(plan))
    res = run_tool("merge", "--in-scratch", scratch)
    assert res.returncode == 0 and "no conflicting keys" in res.stderr, res.stderr
    assert f"{scratch / 'w1' / 'rec' / 'mm.json'}: kernel k's keys were carried under the fingerprint" in res.stderr
    assert json.loads((scratch / "merged.json").read_text()) == {"k": {"a": {"kwargs": {"BLOCK": 128}}},
                                                                  "j": {"x": cfg, "y": cfg}}
    published = run_tool("publish", "--op", "mm", "--record-dir", tmp_path / "rec", scratch)
    assert published.returncode == 0 and "disagree" not in published.stderr, published.stderr
    assert json.loads((tmp_path / "rec" / "mm.meta.json").read_text())["kernels"] == {"k": "new", "j": "jj"}

    # Both shards ran k (no `unchecked`): a real disagreement, kept and named as before.
    meta = json.loads((scratch / "w1" / "rec" / "mm.meta.json").read_text())
    del meta["unchecked"]
    (scratch / "w1" / "rec" / "mm.meta.json").write_text(json.dumps(meta))
    res = run_tool("merge", "--in-scratch", scratch)
    assert res.returncode == 0 and "1 conflicting key(s)" in res.stderr, res.stderr


# -- property: any record set Python writes -----------------------------------------------------

TEXT = st.text(st.characters(), max_size=6)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
RECORDS = st.lists(
    st.dictionaries(st.sampled_from(["k1", "k2", "ü"]),
                    st.dictionaries(st.sampled_from(["a", "b", "c", "\u2028"]) | TEXT, VALUES,
                                    max_size=4),
                    max_size=3),
    min_size=1, max_size=4,
)


@settings(UNTIMED, max_examples=120)
@given(records=RECORDS)
def test_property_merge_equals_python(tmp_path, records):
    paths = []
    for i, rec in enumerate(records):
        p = tmp_path / f"h{i}.json"
        with open(p, "w") as f:
            json.dump(rec, f)
        paths.append(p)
    check_merge(tmp_path, paths)
