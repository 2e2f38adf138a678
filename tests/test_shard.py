"""warmup-shard against real PyYAML: a child's `yaml.safe_load` of its shard must give exactly the
objects (types and values, dict order too) that `yaml.safe_load` gives for the source's entry."""

from __future__ import annotations

import datetime
import json
import math
import os
import re
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import event, given, settings
from hypothesis import strategies as st

from support import FLAGGEMS_DATA, UNTIMED, run_tool

CORPUS = Path(__file__).resolve().parent / "yaml_corpus"
SHARD_COUNTS = (2, 3, 7, 64)


def same(a, b, path="$"):
    """Type-exact equality: bool is not int, dict order counts, NaN equals NaN."""
    assert type(a) is type(b), f"{path}: {type(a).__name__} {a!r} != {type(b).__name__} {b!r}"
    if isinstance(a, dict):
        assert list(a) == list(b) or len(a) != len(b), f"{path}: key order {list(a)} != {list(b)}"
        assert len(a) == len(b), f"{path}: keys {list(a)} != {list(b)}"
        for (ka, va), (kb, vb) in zip(a.items(), b.items()):
            same(ka, kb, f"{path}.key")
            same(va, vb, f"{path}[{ka!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b), f"{path}: nan != {b!r}"
    elif isinstance(a, datetime.datetime):
        assert a == b and a.utcoffset() == b.utcoffset(), f"{path}: {a!r} != {b!r}"
    elif isinstance(a, set):
        assert a == b and sorted(map(repr, a)) == sorted(map(repr, b)), f"{path}: {a!r} != {b!r}"
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def expected_shards(doc, op, n):
    entry = doc[op]
    shapes = entry["shapes"]
    k = min(n, len(shapes))
    return [{op: {key: (shapes[i::k] if key == "shapes" else v) for key, v in entry.items()}}
            for i in range(k)]


def load(path: Path):
    """The source as a benchmark reads it: a text-mode file handed to safe_load."""
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def check_file(tmp_path, path: Path, op, n, label="", doc=None):
    """Shards `path` and checks every shard against `doc`, the source as safe_load reads it
    (parsed here when not given: pass it when checking one file many times)."""
    if doc is None:
        doc = load(path)
    out = tmp_path / f"out-{label}-{n}"
    r = run_tool("shard", "--op", op, "--shards", n, "--out", out, path)
    total = len(doc[op]["shapes"])
    if min(n, total) < 2:
        assert r.returncode == 3, r.stderr
        return
    assert r.returncode == 0, r.stderr
    files = r.stdout.splitlines()
    want = expected_shards(doc, op, n)
    assert len(files) == len(want)
    for i, (f, w) in enumerate(zip(files, want)):
        got = yaml.safe_load(Path(f).read_text(encoding="utf-8"))
        try:
            same(got, w)
        except AssertionError as e:
            raise AssertionError(f"{path} op {op!r} n={n} shard {i}: {e}\n{Path(f).read_text()}") from None
    plan = json.loads((out / "plan.json").read_text())
    assert plan["op"] == op and plan["shapes"] == total and plan["strategy"] == "round-robin"
    assert [s["shapes"] for s in plan["shards"]] == [list(range(i, total, len(want))) for i in range(len(want))]


def ops_of(doc):
    return [op for op, v in doc.items()
            if isinstance(op, str) and isinstance(v, dict) and isinstance(v.get("shapes"), list)]


FLAGGEMS_FILES = sorted(FLAGGEMS_DATA.glob("*.yaml"))


def test_flaggems_files_hold_182_ops():
    assert sum(len(yaml.safe_load(p.read_text())) for p in FLAGGEMS_FILES) >= 182


@pytest.mark.parametrize("path", FLAGGEMS_FILES, ids=lambda p: p.name)
def test_every_flaggems_op_shards_faithfully(tmp_path, path):
    doc = load(path)
    ops = ops_of(doc)
    assert ops
    for op in ops:
        for n in SHARD_COUNTS:
            check_file(tmp_path, path, op, n, op, doc=doc)


CORPUS_FILES = sorted(CORPUS.glob("*.yaml"))


def variants(path: Path, tmp_path: Path):
    text = path.read_text(encoding="utf-8")
    yield "lf", path
    crlf = tmp_path / f"crlf-{path.name}"
    crlf.write_bytes(text.replace("\n", "\r\n").encode())
    yield "crlf", crlf
    bom = tmp_path / f"bom-{path.name}"
    bom.write_bytes(b"\xef\xbb\xbf" + text.encode())
    yield "bom", bom


def test_an_indentless_list_led_by_a_flow_shape_stays_one_shape_per_line(tmp_path):
    src = tmp_path / "indentless.yaml"
    src.write_text("mm:\n  shapes:\n  - [1, 2]\n  - [3, 4]\n  - ?8\n  - [5, 6]\n")
    res = run_tool("shard", "--op", "mm", "--shards", "2", "--out", tmp_path / "out", src)
    assert res.returncode == 0, res.stderr
    text = (tmp_path / "out" / "w0" / "shapes.yaml").read_text()
    assert "\n    - [1, 2]\n    - \"?8\"\n" in text, text
    assert yaml.safe_load(text) == {"mm": {"shapes": [[1, 2], "?8"]}}


def test_corpus_has_at_least_150_items():
    total = 0
    for p in CORPUS_FILES:
        doc = yaml.safe_load(p.read_text())
        total += sum(len(v["shapes"]) for v in doc.values()
                     if isinstance(v, dict) and isinstance(v.get("shapes"), list))
    assert total >= 150


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.name)
def test_tricky_corpus_shards_faithfully(tmp_path, path):
    for label, variant in variants(path, tmp_path):
        doc = load(variant)
        for op in ops_of(doc):
            for n in SHARD_COUNTS:
                check_file(tmp_path, variant, op, n, f"{label}-{abs(hash(op))}", doc=doc)


# --- generated documents ------------------------------------------------------------------

POOL = [
    "yes", "No", "on", "y", "1e-5", "1.0e+5", "017", "08", "1:30", "190:20:30.15", "0b101", "0x1F",
    "1_000", ".inf", "-.Inf", ".nan", "~", "null", "", "2001-12-14", "2001-12-14 21:59:43.10 -5",
    "<<x", "a b", "a:b", "-x", "hello", "0", "-0", "3.14", "x: y", "a, b", "[x]", "#c", "'q'",
    "\"dq\"", "tab\t", " lead", "trail ", "multi\nline", "ü中😀", "\\back", "!bang", "&amp", "*star",
    "=", "?", "-", "---", "...", "%", "@", "`", "|", ">", "{}", "[]",
]


def render_scalar(draw, s):
    style = draw(st.sampled_from(["plain", "single", "double", "tagged"]))
    if style == "plain":
        return s if s and "\n" not in s else '""'
    if style == "single":
        return "'" + s.replace("'", "''") + "'" if "\n" not in s else json.dumps(s)
    if style == "tagged":
        return "!!str " + json.dumps(s, ensure_ascii=False)
    # JSON writes astral characters as surrogate pairs; PyYAML reads those as two lone
    # surrogates (a str that cannot be encoded), which warmup-shard refuses: a known gap.
    astral = any(ord(c) > 0xFFFF for c in s)
    return json.dumps(s, ensure_ascii=not astral and draw(st.booleans()))


@st.composite
def node(draw, depth=0, anchors=None):
    kind = draw(st.sampled_from(["scalar", "scalar", "flowseq", "flowmap"] + (["alias"] if anchors else [])))
    if depth > 2:
        kind = "scalar"
    if kind == "alias":
        return "*" + draw(st.sampled_from(sorted(anchors)))
    if kind == "scalar":
        text = render_scalar(draw, draw(st.sampled_from(POOL)))
    elif kind == "flowseq":
        items = draw(st.lists(node(depth + 1, anchors), max_size=3))
        text = "[" + ", ".join(items) + "]"
    else:
        keys = draw(st.lists(st.sampled_from(["a", "b", "'yes'", "yes", "1", "x y", "\"q\""]), max_size=3))
        vals = [draw(node(depth + 1, anchors)) for _ in keys]
        text = "{" + ", ".join(f"{k}: {v}" for k, v in zip(keys, vals)) + "}"
    if anchors is not None and draw(st.booleans()) and not text.startswith("*"):
        name = f"a{len(anchors)}"
        anchors.add(name)
        text = f"&{name} {text}"
    return text


@st.composite
def document(draw):
    anchors: set[str] = set()
    lines = ["defs:"]
    for i in range(draw(st.integers(0, 3))):
        lines.append(f"  d{i}: {draw(node(0, anchors))}")
    lines.append("op:")
    lines.append(f"  extra: {draw(node(0, anchors))}")
    lines.append("  shapes:")
    for _ in range(draw(st.integers(2, 8))):
        if draw(st.booleans()):
            lines.append("    # between items")
        lines.append(f"    - {draw(node(0, anchors))}")
    return "\n".join(lines) + "\n"


@settings(UNTIMED, max_examples=100)
@given(text=document(), n=st.integers(2, 5))
def test_generated_documents_shard_faithfully(tmp_path, text, n):
    try:
        yaml.safe_load(text)
    except yaml.YAMLError:
        event("source rejected by safe_load")
        return
    event("source sharded")
    src = tmp_path / "gen.yaml"
    src.write_text(text, encoding="utf-8")
    check_file(tmp_path, src, "op", n, "gen")


# Documents as PyYAML's own emitter writes them, in every style it has: block and flow,
# indentless lists, canonical form, folded long lines, literal and folded block scalars, quoted
# keys, anchors for shared objects, U+0085, U+2028 and U+2029 (line breaks to PyYAML).
DUMPED_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
DUMPED_SCALARS = st.one_of(
    st.sampled_from(POOL), DUMPED_TEXT, st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True), st.booleans(), st.none(), st.binary(max_size=8),
    st.dates(), st.datetimes(),
)
DUMPED_NODES = st.recursive(
    DUMPED_SCALARS,
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.one_of(st.sampled_from(["a", "yes", "1", ""]), DUMPED_TEXT,
                                st.integers(0, 9), st.booleans()), inner, max_size=3),
    max_leaves=8,
)


@settings(UNTIMED, max_examples=80)
@given(shared=DUMPED_NODES, extra=DUMPED_NODES, shapes=st.lists(DUMPED_NODES, min_size=2, max_size=7),
       style=st.fixed_dictionaries({
           "default_flow_style": st.sampled_from([None, False, True]),
           "width": st.sampled_from([10, 80, 1000]),
           "allow_unicode": st.booleans(), "canonical": st.booleans(),
           "explicit_start": st.booleans(), "indent": st.sampled_from([2, 4]),
           "default_style": st.sampled_from([None, "|", ">", '"', "'"])}),
       n=st.integers(2, 4))
def test_pyyaml_dumped_documents_shard_faithfully(tmp_path, shared, extra, shapes, style, n):
    shapes = [*shapes, shared]  # a shape that is also used outside the op: an anchor and alias
    text = yaml.safe_dump({"defs": shared, "op": {"extra": extra, "shapes": shapes}},
                          sort_keys=False, **style)
    src = tmp_path / "dumped.yaml"
    src.write_text(text, encoding="utf-8")
    check_file(tmp_path, src, "op", n, "dumped")


@pytest.mark.parametrize("flow", ["[x, ?]", "[x, ?y]", "{?}", "[x, -]", "{? a}", "[? a : b, c]"])
def test_a_plain_question_mark_or_dash_in_a_flow_collection_shards_as_pyyaml_reads_it(tmp_path, flow):
    src = tmp_path / "q.yaml"
    src.write_text(f"op:\n  shapes: [1, {flow}]\n", encoding="utf-8")
    check_file(tmp_path, src, "op", 2, "q")


# --- what PyYAML reads, though the YAML spec would not ------------------------------------

ACCEPTS = {
    "flow_sequence_continued_less_indented": "op:\n  shapes:\n    - [1024,\n  512]\n    - [1,\n2]\n",
    "flow_mapping_continued_less_indented": "op:\n  shapes:\n    - {m: 1024,\n n: 512}\n    - 2\n",
    "double_quoted_continued_less_indented": "op:\n  shapes:\n    - \"ab\n  cd\"\n    - \"x\ny\"\n",
    "single_quoted_continued_less_indented": "op:\n  shapes:\n    - 'ab\n cd'\n    - 2\n",
    "comment_right_after_a_flow_collection": "op:\n  shapes:\n    - [1, 2]#c\n    - {a: 1}#d\n",
    "line_separators_are_line_breaks": (
        "op:\n  shapes:\n    - \"c\u2029d\"\n    - [e\x85 f]\n    - \"a\u2028\n   b\"\n    - x\u2028      y\n"
    ),
    "recursive_data_outside_the_op": "loop: &r [1, *r]\nop:\n  shapes: [1, 2]\n",
    "empty_keys_in_flow_collections": "op:\n  shapes:\n    - {? : 1}\n    - [a: 1, ? : 2]\n",
}


@pytest.mark.parametrize("name", sorted(ACCEPTS))
def test_input_pyyaml_reads_beyond_the_spec_shards_faithfully(tmp_path, name):
    src = tmp_path / "lenient.yaml"
    src.write_text(ACCEPTS[name], encoding="utf-8")
    check_file(tmp_path, src, "op", 2, name)


def test_a_recursive_op_entry_is_refused_saying_pyyaml_reads_it_and_how_to_rewrite_it(tmp_path):
    src = tmp_path / "rec.yaml"
    src.write_text("op: &o\n  shapes: [1, *o]\n", encoding="utf-8")
    doc = load(src)
    assert doc["op"]["shapes"][1] is doc["op"]  # PyYAML reads it
    r = run_tool("shard", "--op", "op", "--shards", 2, "--out", tmp_path / "out", src)
    assert r.returncode == 2, r.stderr
    assert "rec.yaml:1:5: " in r.stderr and "PyYAML reads it" in r.stderr and "copy" in r.stderr
    assert not (tmp_path / "out").exists()


# --- what safe_load rejects ---------------------------------------------------------------

REJECTS = {
    "python_tuple": "op:\n  shapes:\n    - !!python/tuple [1, 2]\n    - [3]\n",
    "local_tag": "op:\n  shapes: [!foo 1, 2]\n",
    "unknown_yaml_tag": "op:\n  shapes: [!!frob 1, 2]\n",
    "two_documents": "op:\n  shapes: [1, 2]\n---\nop:\n  shapes: [3, 4]\n",
    "unhashable_key": "op:\n  shapes: [{[1]: 2}, 3]\n",
    "unhashable_key_elsewhere": "other: {{a: 1}: 2}\nop:\n  shapes: [1, 2]\n",
    "bad_int": "op:\n  shapes: [!!int \"abc\", 2]\n",
    "bad_float": "op:\n  shapes: [!!float \"x\", 2]\n",
    "bad_bool": "op:\n  shapes: [!!bool \"maybe\", 2]\n",
    "bad_timestamp": "op:\n  shapes: [2001-02-30, 2]\n",
    "bad_binary": "op:\n  shapes: [!!binary \"aGVsbG8\", 2]\n",
    "value_scalar": "op:\n  shapes: [=, 2]\n",
    "merge_scalar_value": "op:\n  shapes: [<<, 2]\n",
    "merge_of_scalar": "op:\n  <<: 3\n  shapes: [1, 2]\n",
    "set_on_list": "op:\n  shapes: [!!set [1], 2]\n",
    "seq_on_scalar": "op:\n  shapes: [!!seq 1, 2]\n",
    "omap_bad_item": "op:\n  shapes: [!!omap [1, 2], 3]\n",
    "undefined_alias": "op:\n  shapes: [*nope, 2]\n",
    "control_char": "op:\n  shapes: [\"a\x01\", 2]\n",
    "syntax": "op:\n  shapes: [1, 2\n",
    # Found by fuzzing against PyYAML 6.0.4: PyYAML refuses each, a YAML-spec parser reads them.
    "duplicate_anchor": "a: &x 1\nb: &x 2\nop:\n  shapes: [1, 2]\n",
    "empty_key_at_top": ": 4\nop:\n  shapes: [1, 2]\n",
    "empty_key_in_op": "op:\n  : 3\n  shapes: [1, 2]\n",
    "question_mark_in_flow_scalar": "op:\n  shapes:\n    - [1?]\n    - 2\n",
    "literal_indicator_in_flow": "op:\n  shapes:\n    - [|1]\n    - 2\n",
    "folded_indicator_in_flow": "op:\n  shapes:\n    - [>2, 3]\n    - 2\n",
    "empty_flow_entry_value": "op:\n  shapes:\n    - [1, :]\n    - 2\n",
    "tab_after_flow_sequence": "op:\n  shapes:\n    - [1, 2]\t\n    - 2\n",
    "tab_after_dash": "op:\n  shapes:\n    -\t[1, 2]\n    - 2\n",
    "empty_key_in_flow_mapping": "op:\n  shapes:\n    - {: 1}\n    - 2\n",
    "plain_scalar_broken_by_line_separator": "op:\n  shapes:\n    - a\u2028b\n    - 2\n",
}


def assert_refused_like_pyyaml(r, src: Path, exc: Exception, out: Path):
    """warmup-shard refused what safe_load raised `exc` for: exit 2, nothing written, and a message
    naming the file and the place (PyYAML's own place for a syntax error), then what to do."""
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert r.stdout == "" and not out.exists()
    m = re.match(rf"warmup-shard: {re.escape(str(src))}:(\d+):(\d+): .+: .+", r.stderr)
    assert m, r.stderr
    mark = getattr(exc, "problem_mark", None)
    if isinstance(exc, (yaml.scanner.ScannerError, yaml.parser.ParserError)) and mark is not None:
        assert (int(m[1]), int(m[2])) == (mark.line + 1, mark.column + 1), (r.stderr, str(exc))


@pytest.mark.parametrize("name", sorted(REJECTS))
def test_input_safe_load_rejects_is_an_error_and_writes_nothing(tmp_path, name):
    text = REJECTS[name]
    src = tmp_path / "bad.yaml"
    src.write_text(text, encoding="utf-8")
    with pytest.raises(Exception) as exc:
        load(src)
    out = tmp_path / "out"
    r = run_tool("shard", "--op", "op", "--shards", 2, "--out", out, src)
    assert_refused_like_pyyaml(r, src, exc.value, out)


# --- what PyYAML versions read differently -----------------------------------------------------

MULTI_MERGE = """\
fast: &fast {block: 64, warps: 4}
slow: &slow {block: BLOCK, stages: 3}
op:
  <<: [*fast, *slow]
  shapes:
    - {<<: [*fast, *slow], x: 1}
    - [2]
"""


def test_a_multi_merge_whose_winner_depends_on_the_pyyaml_version_is_refused(tmp_path):
    # PyYAML 6.0.4 takes block 128 here, 6.0.3 and the merge-key spec take 64: a shard can
    # only be right for one of them, so none is written.
    src = tmp_path / "multi.yaml"
    src.write_text(MULTI_MERGE.replace("BLOCK", "128"), encoding="utf-8")
    r = run_tool("shard", "--op", "op", "--shards", 2, "--out", tmp_path / "out", src)
    assert r.returncode == 2, r.stderr
    assert "multi.yaml:4:3: key block" in r.stderr and "PyYAML 6.0.4" in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


def test_a_multi_merge_that_every_pyyaml_reads_alike_is_sharded(tmp_path):
    # The shared key agrees, and the shape's own merge is written as a merge: each child's
    # PyYAML resolves it exactly as it resolves the source.
    src = tmp_path / "multi.yaml"
    src.write_text(MULTI_MERGE.replace("BLOCK", "64"), encoding="utf-8")
    check_file(tmp_path, src, "op", 2, "multi")
    shard = (tmp_path / "out-multi-2" / "w0" / "shapes.yaml").read_text()
    assert "<<: [" in shard, shard


# --- differential fuzz: warmup-shard against PyYAML on documents built from tricky pieces ------

# Pieces that PyYAML reads differently from the YAML spec, or that are easy to get wrong: flow
# collections across lines (less indented too), tabs, `?` and `:` in and out of flow collections,
# block scalar indicators inside flow, comments with no space before them, quoted scalars across
# lines, anchors (one defined twice too) and aliases.
FUZZ_LEAVES = [
    "1", "x", "-1", "a b", "?x", "-x", ":x", "x:y", "x :y", "x?", "'q'", "'a''b'", '"d"', '"d\\tq"',
    "!!str 1", "!!int 2", "! 3", "&n 4", "~", "", "-", "*A", '"ab\n cd"', '"ab\ncd"', "'ab\n  cd'",
    '"a\\\n  b"', '"a\n\n  b"', "x # c", "'\t'", "? a : b",
]
# Each of these makes most documents that hold it unreadable to PyYAML: drawn less often.
FUZZ_TRICKY_LEAVES = ["?", ":", "|1", ">2", "#c", "%", "@", "x\t", "\tx", "*Z", "&R [1, *R]", "a\tb"]
FUZZ_SEPARATORS = ["", " ", "  ", "\n", "\n  ", "\n      ", "\n\n", " #c\n", "#c\n"]
FUZZ_TRICKY_SEPARATORS = ["\t", "\n\t", " \t"]
FUZZ_ENTRIES = ["{k}: {v}", "{k}:{v}", "? {k}", "? {k} : {v}", ": {v}", "{k}", "{k} :{v}"]


def sometimes_tricky(draw, usual, tricky):
    """One of `usual`, now and then one of `tricky` (hypothesis favours edge cases of integers)."""
    return draw(st.sampled_from(usual * 8 + tricky))


@st.composite
def fuzz_flow(draw, depth=0):
    kind = draw(st.sampled_from(["leaf"] * 3 + (["seq", "map"] if depth < 2 else [])))
    if kind == "leaf":
        return sometimes_tricky(draw, FUZZ_LEAVES, FUZZ_TRICKY_LEAVES)
    sep = lambda: sometimes_tricky(draw, FUZZ_SEPARATORS, FUZZ_TRICKY_SEPARATORS)  # noqa: E731
    if kind == "seq":
        items = [draw(fuzz_flow(depth + 1)) for _ in range(draw(st.integers(0, 3)))]
        if draw(st.booleans()) and items:
            items[0] = draw(st.sampled_from(["? a : b", "a: b", "? a"]))
        opening, closing = "[", "]"
    else:
        items = [draw(st.sampled_from(FUZZ_ENTRIES)).format(k=draw(fuzz_flow(depth + 1)),
                                                           v=draw(fuzz_flow(depth + 1)))
                 for _ in range(draw(st.integers(0, 3)))]
        opening, closing = "{", "}"
    trailing = "," if items and draw(st.integers(0, 4)) == 0 else ""
    return opening + sep() + ("," + sep()).join(items) + trailing + sep() + closing


@st.composite
def fuzz_item(draw):
    lead = sometimes_tricky(draw, ["- ", "-  "], ["-\t", "-"])
    kind = draw(st.sampled_from(["flow", "flow", "flow", "block", "alias"]))
    if kind == "block":
        body = draw(st.sampled_from(["|", ">", "|-", ">+", "|2", "| #c"])) + "\n" + sometimes_tricky(
            draw, ["      one\n       two", "      one\n\n      two", "     x\n    y"], ["\t x", "      a\tb"])
    elif kind == "alias":
        body = "*A"
    else:
        body = draw(fuzz_flow())
    tail = sometimes_tricky(draw, ["", "", "#c", " #c", " ", " # c\t"], ["\t", " \t#c"])
    return "    " + lead + body + tail


@st.composite
def fuzz_document(draw):
    lines = ["defs: &A " + sometimes_tricky(draw, ["[1, 2]", "{a: 1}", "x"], ["&B y", "!!str &B y"])]
    if draw(st.integers(0, 9)) == 0:
        lines.append(draw(st.sampled_from(["dup: &A 3", ": 4", "\tk: v", "loop: &L [*L]"])))
    lines += ["op:", "  note: " + draw(fuzz_flow())]
    if draw(st.integers(0, 9)) == 0:
        lines.append(draw(st.sampled_from(["  : 3", "  ? k\n  : v", "  k:\tv"])))
    lines.append("  shapes:")
    lines += [draw(fuzz_item()) for _ in range(draw(st.integers(2, 5)))]
    return "\n".join(lines) + "\n"


FUZZ_SEED = """\
base: &b {x: 1, y: [a, b]}
op:
  <<: *b
  note: "q\\n"
  shapes:
    - [1, 2]
    - !!int 3
    - {k: *b, ? z : 1, ? : 2}
    - |
      text
    - 'it''s'
    - ? a
      : b
    - [1024,
       512]
    - "ab
      cd"#c
"""
FUZZ_EDITS = " \n:-[]{}&*!?|>\"'#<a1\t,%@`\u2028\x85"


@st.composite
def mutated_document(draw):
    """The seed with a few characters inserted or deleted: small steps off what PyYAML reads."""
    chars = list(FUZZ_SEED)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(chars)))
        edit = draw(st.sampled_from(FUZZ_EDITS + "\0"))
        if edit == "\0" and at < len(chars):
            del chars[at]
        elif edit != "\0":
            chars.insert(at, edit)
    return "".join(chars)


def cyclic(obj, open_ids=()):
    """Whether a container reaches itself (PyYAML builds recursive objects from aliases)."""
    if isinstance(obj, (list, dict)):
        if id(obj) in open_ids:
            return True
        inner = list(obj.items()) if isinstance(obj, dict) else obj
        return any(cyclic(x, (*open_ids, id(obj))) for x in inner)
    if isinstance(obj, tuple):
        return any(cyclic(x, open_ids) for x in obj)
    return False


def lone_surrogates(obj, seen=None):
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return False
    seen.add(id(obj))
    if isinstance(obj, str):
        return any(0xD800 <= ord(c) < 0xE000 for c in obj)
    inner = list(obj.items()) if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else []
    return any(lone_surrogates(x, seen) for x in inner)


def check_against_pyyaml(tmp_path, text, n, label):
    """warmup-shard accepts exactly what safe_load reads and, where it shards, writes exactly the
    objects safe_load reads; where it refuses what PyYAML reads, it is for a documented reason."""
    tmp_path = Path(tempfile.mkdtemp(dir=tmp_path))  # one per example: hypothesis reuses tmp_path
    src = tmp_path / f"{label}.yaml"
    src.write_text(text, encoding="utf-8")
    out = tmp_path / f"out-{label}-{n}"
    try:
        doc = load(src)
    except Exception as exc:  # noqa: BLE001 - any exception is a refusal by safe_load
        event("rejected by safe_load")
        r = run_tool("shard", "--op", "op", "--shards", n, "--out", out, src)
        assert_refused_like_pyyaml(r, src, exc, out)
        return
    entry = doc.get("op") if isinstance(doc, dict) else None
    if not (isinstance(entry, dict) and isinstance(entry.get("shapes"), list)):
        event("read by safe_load, no op shapes")
        r = run_tool("shard", "--op", "op", "--shards", n, "--out", out, src)
        assert r.returncode == 2 and not out.exists(), r.stderr
    elif cyclic(entry) or lone_surrogates(entry):
        event("read by safe_load, refused on purpose")
        r = run_tool("shard", "--op", "op", "--shards", n, "--out", out, src)
        assert r.returncode == 2 and not out.exists(), r.stderr
        assert "PyYAML reads it" in r.stderr or "surrogate" in r.stderr, r.stderr
    else:
        event("read by safe_load, sharded")
        check_file(tmp_path, src, "op", n, label, doc=doc)


# A few seconds in the suite; when the scanner or parser changes, run it longer, e.g.
# WARMUP_FUZZ_EXAMPLES=5000 (7,000 examples found nothing left to fix after the PyYAML port).
@settings(UNTIMED, max_examples=int(os.environ.get("WARMUP_FUZZ_EXAMPLES", "100")))
@given(text=st.one_of(fuzz_document(), mutated_document()), n=st.integers(2, 3))
def test_warmup_shard_accepts_and_shards_exactly_what_pyyaml_reads(tmp_path, text, n):
    check_against_pyyaml(tmp_path, text, n, "fuzz")


# --- FlagGems' convention: shapes under a benchmark class name -------------------------------

def flaggems_shapes(config, op_name, class_names):
    """FlagGems' `Benchmark.set_shapes` lookup (benchmark/performance_utils.py): the op's own entry,
    else the first of the benchmark's class names (its `__mro__`) that the file has."""
    if op_name in config:
        return config[op_name].get("shapes")
    for name in class_names:
        if name in config:
            return config[name].get("shapes")
    return None


@pytest.mark.parametrize("n", [2, 3])
def test_an_entry_under_a_class_name_is_found_by_each_child_where_flaggems_looks(tmp_path, n):
    src = FLAGGEMS_DATA / "core_shapes.yaml"
    source = load(src)
    assert "mm" not in source and "BlasBenchmark" in source
    out = tmp_path / "out"
    r = run_tool("shard", "--op", "mm", "--entry", "BlasBenchmark", "--shards", n, "--out", out, src)
    assert r.returncode == 0, r.stderr
    plan = json.loads((out / "plan.json").read_text())
    assert (plan["op"], plan["entry"]) == ("mm", "BlasBenchmark")
    mro = ["BlasBenchmark", "Benchmark", "object"]
    got = [flaggems_shapes(load(Path(f)), "mm", mro) for f in r.stdout.splitlines()]
    want = source["BlasBenchmark"]["shapes"]
    assert [s for i in range(len(want)) for s in [got[i % n][i // n]]] == want
    for f in r.stdout.splitlines():
        shard = load(Path(f))
        assert list(shard) == ["BlasBenchmark"]
        assert shard["BlasBenchmark"]["shape_desc"] == source["BlasBenchmark"]["shape_desc"]


def test_a_missing_op_suggests_the_class_name_entry(tmp_path):
    out = tmp_path / "out"
    r = run_tool("shard", "--op", "mm", "--shards", 2, "--out", out, FLAGGEMS_DATA / "core_shapes.yaml")
    assert r.returncode == 2 and not out.exists()
    assert 'no op "mm"' in r.stderr and "--entry BlasBenchmark" in r.stderr, r.stderr
