#!/usr/bin/env bash
# bench_line.sh: issue 30's figures, one device call: FlagGems' own benchmark typed as a user types
# it, plain (FlagGems' store on) against the one line `warmup -- pytest ...` with nothing set but
# the command, each from a home of its own (HOME, so FlagGems' store in ~/.flaggems, Triton's cache
# in ~/.triton and the record cache in ~/.cache are its own), cold and then re-run in the same home:
#
#   mm     pytest benchmark/test_mm.py::test_mm -m mm --dtypes float16 --level core
#   addmm  pytest benchmark/test_addmm.py::test_addmm -m addmm --dtypes bfloat16 --level core
#
# (FlagGems 5.3 and later; on 5.0, `benchmark/test_blas_perf.py -m OP -k test_blas_benchmark`:
# lib.sh's flaggems_test tells which by what the checkout has.)
#
# `--record log` is added to both sides: without it FlagGems 5.0.2's benchmark ends every test
# FAILED after its last shape (its record logger's AttributeError under pytest), plain or not; and
# `-s`, so that its latency table reaches the log (e2e_report.py compares the picks from it).
# From the repo root with .bin, .whl and a FlagGems tree carried (as bench_e2e.sh); everything
# lands in $OUT: line.log, runs.jsonl, line.md (e2e_report.py's tables), logs.tar.gz.
#
# usage: tests/gpu/bench_line.sh --flaggems DIR [--cases mm,addmm] [--modes cold,rerun]
#            [--repeat N] [--gpus N] [--budget SECS]

set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit 2
start=$SECONDS
flaggems='' cases=mm,addmm modes=cold,rerun repeat=1 gpus='' budget=560
while [ $# -gt 0 ]; do
    case $1 in
        --flaggems) flaggems=$2; shift 2 ;;
        --cases) cases=$2; shift 2 ;;
        --modes) modes=$2; shift 2 ;;
        --repeat) repeat=$2; shift 2 ;;
        --gpus) gpus=$2; shift 2 ;;
        --budget) budget=$2; shift 2 ;;
        -h | --help) sed -n '2,/^$/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench_line: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
# shellcheck source=tests/gpu/lib.sh
. "$root/tests/gpu/lib.sh"
[ -n "$flaggems" ] || { echo "bench_line: --flaggems DIR is required" >&2; exit 2; }
flaggems_test "$flaggems" mm >/dev/null || exit 2
flaggems=$(cd "$flaggems" && pwd)
OUT=${OUT:-$root/gpu_out}
mkdir -p "$OUT/logs"
exec > >(tee -a "$OUT/line.log") 2>&1
say() { printf '[bench_line %4ss] %s\n' "$((SECONDS - start))" "$*"; }
python=${PYTHON:-python3}

# The user's machine: pytest, the tools and the harness on PATH, nothing of ours in the environment.
install_wheels "$python" || { say "FAILED to install .whl"; exit 1; }
mkdir -p /tmp/line-bin
ln -sf "$root/.bin"/warmup-* "$root/scripts/warmup" /tmp/line-bin/
mkdir -p /tmp/line-bin/lib && ln -sf "$root/scripts/lib/warmup-common.sh" /tmp/line-bin/lib/
# pytest as pip installs it: a script whose #! line names its Python (warmup-plan reads it there).
printf '#!%s\nimport sys\nfrom pytest import console_main\nsys.exit(console_main())\n' \
    "$(command -v "$python")" >/tmp/line-bin/pytest && chmod +x /tmp/line-bin/pytest
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PATH=/tmp/line-bin:$PATH WARMUP_BIN_DIR=$root/.bin
flaggems_path "$flaggems"
unset XDG_CACHE_HOME TRITON_CACHE_DIR FLAGGEMS_CACHE_DIR FLAGGEMS_PERF_CURRENT_OP \
    FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR PARALLEL_WARMUP_GPUS
say "repo $(git rev-parse --short HEAD 2>/dev/null || echo '?'); $(nproc) CPUs; $(nvidia-smi -L | head -1)"

runs=$OUT/runs.jsonl
: >"$runs"
run() { # NAME CASE VARIANT MODE REP HOME ARGV...
    local name=$1 case=$2 variant=$3 mode=$4 rep=$5 home=$6 rc t0 t1
    shift 6
    mkdir -p "$home"
    t0=$(date +%s.%N)
    (cd "$flaggems" && HOME=$home "$@") >"$OUT/logs/$name.log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    "$python" "$root/tests/gpu/e2e_report.py" --run "$name" "$case" "$variant" "$mode" "$rep" "$rc" "$t0" "$t1" \
        "$OUT/logs/$name.log" >>"$runs"
    say "$name: rc $rc in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"
}

IFS=, read -r -a case_list <<<"$cases"
IFS=, read -r -a mode_list <<<"$modes"
base=/tmp/line
rm -rf "$base"
gpu_opt=()
[ -z "$gpus" ] || gpu_opt=(--gpus "$gpus")
for rep in $(seq 1 "$repeat"); do
    for case in "${case_list[@]}"; do
        dtype=float16
        [ "$case" != addmm ] || dtype=bfloat16
        args=$(flaggems_test "$flaggems" "$case") || exit 2  # a process substitution would hide its status
        mapfile -t test <<<"$args"
        line=(pytest "${test[@]}" --dtypes "$dtype" --level core --record log -s)
        for mode in "${mode_list[@]}"; do
            if [ $((SECONDS - start)) -gt "$budget" ]; then say "budget spent: $case $mode (repetition $rep) not run"; continue; fi
            run "plain_${case}_${mode}_r$rep" "$case" plain "$mode" "$rep" "$base/plain_${case}_r$rep" "${line[@]}"
            run "ours_${case}_${mode}_r$rep" "$case" ours "$mode" "$rep" "$base/ours_${case}_r$rep" \
                warmup "${gpu_opt[@]}" -- "${line[@]}"
        done
    done
done
"$python" "$root/tests/gpu/e2e_report.py" --table "$runs" >"$OUT/line.md" && cat "$OUT/line.md"
tar -czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$OUT/logs"
say "done"
