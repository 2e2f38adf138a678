#!/usr/bin/env bash
# profile_replay.sh: where a light op's re-run spends the time that plain's does not (issue 31,
# item 5). One device call, from the repo root, with .bin, .whl and a FlagGems tree carried (as
# bench_e2e.sh). FlagGems' bf16 addmm over tests/gpu/e2e_shapes_addmm.yaml:
#
#   1. cold, once each: plain (fills its FlagGems store) and ours (scripts/warmup --gpus 1, fills
#      its record), each from a home of its own;
#   2. re-runs, REPEAT times, alternating: plain; ours through scripts/warmup; ours direct (the
#      environment warmup-plan gives a replay, set by hand, no script); plain with the harness kept
#      out (-p no:warmup_harness), which tells the plugin's own cost when it does nothing;
#   3. one re-run each of plain and ours under cProfile (the whole process) and with
#      PYTHONPROFILEIMPORTTIME=1, summarised into $OUT/profile.md.
#
# Wall seconds are start to exit of each command; pytest's own session seconds come from its
# closing line. usage: tests/gpu/profile_replay.sh --flaggems DIR [--repeat N]

set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit 2
flaggems='' repeat=3
while [ $# -gt 0 ]; do
    case $1 in
        --flaggems) flaggems=$2; shift 2 ;;
        --repeat) repeat=$2; shift 2 ;;
        -h | --help) sed -n '2,/^$/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "profile_replay: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
# shellcheck source=tests/gpu/lib.sh
. "$root/tests/gpu/lib.sh"
[ -n "$flaggems" ] || { echo "profile_replay: --flaggems DIR is required" >&2; exit 2; }
flaggems_test "$flaggems" mm >/dev/null || exit 2
flaggems=$(cd "$flaggems" && pwd)
OUT=${OUT:-$root/gpu_out}
mkdir -p "$OUT/logs"
exec > >(tee -a "$OUT/profile.log") 2>&1
python=${PYTHON:-python3}
install_wheels "$python" || exit 1
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} WARMUP_BIN_DIR=$root/.bin
flaggems_path "$flaggems"

base=/tmp/prof
rm -rf "$base" && mkdir -p "$base/shapes"
cp tests/gpu/e2e_shapes_addmm.yaml "$base/shapes/addmm.yaml"
times=$OUT/times.tsv
printf 'name\twall_s\tpytest_s\trc\n' >"$times"

# run NAME HOME ARGV...: one timed run from FlagGems' root with HOME's Triton cache and store.
run() {
    local name=$1 home=$2 t0 t1 rc session
    shift 2
    mkdir -p "$home/triton" "$home/fg" "$home/rec"
    t0=$(date +%s.%N)
    (cd "$flaggems" && env TRITON_CACHE_DIR="$home/triton" FLAGGEMS_CACHE_DIR="$home/fg" \
        FLAGGEMS_PERF_CURRENT_OP=addmm "$@") >"$OUT/logs/$name.log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    session=$(grep -Eo 'in [0-9.]+s' "$OUT/logs/$name.log" | tail -1 | tr -dc '0-9.')
    printf '%s\t%s\t%s\t%s\n' "$name" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')" \
        "${session:-?}" "$rc" | tee -a "$times"
}

args=$(flaggems_test "$flaggems" addmm) || exit 2  # a process substitution would hide its status
mapfile -t test <<<"$args"
bench=(-m pytest -q -s "${test[@]}" --dtypes bfloat16
       --shape_file "$base/shapes/addmm.yaml" --level core --warmup 100 --iter 100 --record log)
plain=(env "$python" "${bench[@]}")
bare=(env "$python" "${bench[@]}" -p no:warmup_harness)
ours=(env FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR="$base/ours/rec" "$root/scripts/warmup" --gpus 1
      --entry BlasBenchmark -- "$python" "${bench[@]}")
direct=(env FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR="$base/ours/rec" WARMUP_HARNESS_RESUME_DIR="$base/ours/rec"
        "$python" "${bench[@]}")

run plain_cold "$base/plain" "${plain[@]}"
run ours_cold "$base/ours" "${ours[@]}"
for i in $(seq 1 "$repeat"); do
    run "plain_$i" "$base/plain" "${plain[@]}"
    run "ours_$i" "$base/ours" "${ours[@]}"
    run "direct_$i" "$base/ours" "${direct[@]}"
    run "bare_$i" "$base/plain" "${bare[@]}"
done

# The whole process under cProfile, and the imports' own times.
prof() { # NAME HOME ARGV... (ARGV's python replaced by python -m cProfile)
    local name=$1 home=$2
    shift 2
    local argv=("$@") i
    for i in "${!argv[@]}"; do
        if [ "${argv[$i]}" = "$python" ]; then
            argv=("${argv[@]:0:$i}" "$python" -m cProfile -o "$OUT/$name.prof" "${argv[@]:$((i + 1))}")
            break
        fi
    done
    run "$name" "$home" env PYTHONPROFILEIMPORTTIME=1 "${argv[@]}"
}
prof plain_prof "$base/plain" "${plain[@]}"
prof ours_prof "$base/ours" "${direct[@]}"

"$python" - "$OUT" <<'EOF' >"$OUT/profile.md"
import pstats, re, sys
out = sys.argv[1]
for name in ("plain_prof", "ours_prof"):
    print(f"## {name}: cumulative seconds, the 40 largest of pytest's hooks, the harness and FlagGems\n```")
    st = pstats.Stats(f"{out}/{name}.prof")
    rows = []
    for (file, line, func), (cc, nc, tt, ct, callers) in st.stats.items():
        if re.search(r"warmup_harness|pluggy/_callers|_pytest/(main|config)|flag_gems/runtime|sqlalchemy", file):
            rows.append((ct, f"{ct:8.3f} {nc:7d} {file.split('site-packages/')[-1]}:{line} {func}"))
    for _, row in sorted(rows, reverse=True)[:40]:
        print(row)
    print("```\n")
    print(f"## {name}: the slowest imports (cumulative us)\n```")
    imports = []
    with open(f"{out}/logs/{name}.log", errors="replace") as f:
        for line in f:
            m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
            if m and len(m.group(3)) <= 3:
                imports.append((int(m.group(2)), m.group(4)))
    for us, mod in sorted(imports, reverse=True)[:25]:
        print(f"{us:>10} {mod}")
    print("```\n")
EOF
cat "$times"
tar -czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$OUT/logs"
