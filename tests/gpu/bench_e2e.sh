#!/usr/bin/env bash
# bench_e2e.sh: issue 24's end-to-end figures, one device call: FlagGems' own benchmark run as a
# user runs it (plain, FlagGems' store on) against scripts/warmup, in the same call, case by case.
#
# On the GPU machine, from the repo root, with .bin, .whl and a FlagGems source tree carried
# (tests/gpu/prepare.sh makes .bin and .whl; the FlagGems tree, its benchmark/ and for 5.3 its src/
# too, put first on PYTHONPATH, is the user's benchmark and is carried, never committed; 5.3 and later
# need no change, test_mm.py and test_addmm.py as tagged). FlagGems 5.0.2's test_blas_benchmark fails as released
# (UnboundLocalError: it assigns FLOAT_DTYPES inside the function, for grouped_mm): the carried copy
# has that one assignment renamed, nothing else. Each case runs plain and ours from a home of its own (Triton
# cache, FlagGems' store, record folder), cold first, then again in the same homes:
#
#   cold    an empty Triton cache and an empty FlagGems store
#   rerun   the same homes again: plain reads FlagGems' store, ours reads its record; rerun1,
#           rerun2, ... name more of them (cold,rerun1,...,rerun5: five re-runs, the variants
#           alternating), as each run is named by its mode
#   mem     the re-run with FLAGGEMS_DB_URL=sqlite:///:memory: (plain re-tunes; ours replays)
#
# Variants (--variants, default plain,ours), each from a home of its own:
#
#   plain   FlagGems' benchmark alone (its store on)
#   nohook  plain with `-p no:warmup_harness`: the installed harness not even loaded (e2e.md's
#           small-shape table sets each beside plain's own spread)
#   ours    scripts/warmup --gpus N, as landed: a swept key's configs raced, each timed as it
#           compiles
#   full    scripts/warmup --gpus N --no-race: every config timed in full, as ours was before
#           racing became the default (e2e.md compares ours' picks with its too)
#   serial  full, with WARMUP_HARNESS_COMPILE_OVERLAP=0: a key's configs timed only once its whole
#           pool is done, as before issue 31
#   history ours, with WARMUP_HARNESS_RACE_HISTORY=3: once a kernel has 3 raced keys, a new key
#           races first the configs that came near on an earlier one (issue 43's holding back,
#           opt-in until measured)
#   audit   ours, with WARMUP_HARNESS_RACE_AUDIT: the dropped configs are timed in full too, and
#           each key's timings land in logs/audit_CASE_MODE_rREP.jsonl (race_audit.py reads them);
#           history off, so that every config is there to judge; its wall time is not racing's
#
# Cases: mm (fp16, 8 shapes) and addmm (bf16, 10 shapes), FlagGems' BLAS benchmark, from FlagGems'
# root; triton, the plain @triton.autotune matmul and softmax of tests/gpu (test_triton_bench.py,
# op gpu_triton, shapes.yaml's), from a copy of tests/gpu, its latencies from GPU_BENCH_RESULT.
#
# Wall times come from this script (start to exit of each command); the picks' latency per shape
# from the table FlagGems' benchmark prints (its "Gems Latency (ms)" column), so plain and ours
# are compared shape by shape. `--record log` is passed as FlagGems' benchmark allows: without it
# FlagGems 5.0.2's benchmark ends every test FAILED after its last shape (its record logger's
# AttributeError under pytest's live logging), plain or not; its log file is left in FlagGems' root.
# Everything lands in $OUT: e2e.log, runs.jsonl (every run), e2e.md (the tables), logs.tar.gz (each
# run's log and, for the triton case, tests/gpu's result file).
#
# usage: tests/gpu/bench_e2e.sh --flaggems DIR [--cases mm,addmm] [--modes cold,rerun,mem]
#            [--variants plain,nohook,ours,history,full,serial,audit] [--gpus N] [--repeat N] [--extra 'ARGS'] [--budget SECS]
#            [--phases] [--alternate]
#
# --phases clocks where each run's time goes (phase_clock.py, loaded into every variant's pytest,
# with TRITON_PRINT_AUTOTUNING=1): e2e.md's last table.
#
# --alternate reverses the variants' order at every other mode (cold plain then ours, rerun1 ours
# then plain, ...), so that no variant always runs right after another one's run.
#
# --repeat N runs every case N times, each repetition from homes of its own (so each cold is cold),
# the variants alternating, to show the run-to-run spread beside the ratios (e2e.md's last table:
# each variant's median and range over the repetitions). Every variant is compared with plain,
# shape by shape; plain must be among the variants.

set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit 2
start=$SECONDS

flaggems=
cases=mm,addmm
modes=cold,rerun,mem
variants=plain,ours
gpus=1
repeat=1
extra=
budget=560
phases=0
alternate=0
while [ $# -gt 0 ]; do
    case $1 in
        --flaggems) flaggems=$2; shift 2 ;;
        --cases) cases=$2; shift 2 ;;
        --modes) modes=$2; shift 2 ;;
        --variants) variants=$2; shift 2 ;;
        --gpus) gpus=$2; shift 2 ;;
        --repeat) repeat=$2; shift 2 ;;
        --extra) extra=$2; shift 2 ;;
        --budget) budget=$2; shift 2 ;;
        --phases) phases=1; shift ;;
        --alternate) alternate=1; shift ;;
        -h | --help) sed -n '2,/^$/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench_e2e: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
# shellcheck source=tests/gpu/lib.sh
. "$root/tests/gpu/lib.sh"
[ -n "$flaggems" ] || { echo "bench_e2e: --flaggems DIR is required" >&2; exit 2; }
# Every FlagGems case's test file, before anything runs.
for case in ${cases//,/ }; do
    [ "$case" = triton ] || flaggems_test "$flaggems" "$case" >/dev/null || exit 2
done
flaggems=$(cd "$flaggems" && pwd)
case ,$variants, in
    *,plain,*) ;;
    *) echo "bench_e2e: --variants must include plain, which every other variant is compared with" >&2; exit 2 ;;
esac
seen=,
for mode in ${modes//,/ }; do
    case $mode in
        cold | mem | rerun | rerun[1-9] | rerun[1-9][0-9]) ;;
        *) echo "bench_e2e: unknown mode '$mode' (cold, rerun, rerun1, rerun2, ..., mem)" >&2; exit 2 ;;
    esac
    case $seen in
        *,"$mode",*)
            echo "bench_e2e: --modes names '$mode' twice, and each run is named by its mode: number the re-runs (cold,rerun1,rerun2,...)" >&2
            exit 2
            ;;
    esac
    seen+=$mode,
done
for variant in ${variants//,/ }; do
    case $variant in
        plain | nohook | ours | history | full | serial | audit) ;;
        *) echo "bench_e2e: unknown variant '$variant' (plain, nohook, ours, history, full, serial, audit)" >&2; exit 2 ;;
    esac
done

OUT=${OUT:-$root/gpu_out}
mkdir -p "$OUT/logs"
exec > >(tee -a "$OUT/e2e.log") 2>&1
say() { printf '[bench_e2e %4ss] %s\n' "$((SECONDS - start))" "$*"; }
python=${PYTHON:-python3}

if compgen -G ".whl/*.whl" >/dev/null; then
    install_wheels "$python" || { say "FAILED to install .whl"; exit 1; }
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
flaggems_path "$flaggems"
export WARMUP_BIN_DIR=$root/.bin
"$WARMUP_BIN_DIR/warmup-shard" --version >/dev/null || { say "FAILED: carry .bin"; exit 1; }
say "repo $(git rev-parse --short HEAD 2>/dev/null || echo '?'); $(nproc) CPUs; $(nvidia-smi -L | head -1)"
"$python" -c 'import torch, triton, flag_gems, warmup_harness as h
print("torch", torch.__version__, "triton", triton.__version__, "flag_gems", flag_gems.__version__, "harness", h.__file__)' \
    || { say "FAILED: torch, triton, flag_gems or warmup_harness do not import"; exit 1; }

runs=$OUT/runs.jsonl
: >"$runs"
# run NAME CASE VARIANT MODE REP HOME -- ARGV...: one timed run from the case's folder (FlagGems' root,
# or the copy of tests/gpu), as a user runs its benchmark, with HOME's Triton cache and FlagGems
# store; its output kept in logs/NAME.log, its latencies from the log or GPU_BENCH_RESULT.
run() {
    local name=$1 case=$2 variant=$3 mode=$4 rep=$5 home=$6 rc t0 t1 dir=$flaggems
    shift 7
    [ "$case" != triton ] || dir=$tgpu
    mkdir -p "$home/triton" "$home/fg" "$home/rec"
    rm -f "$home/result.json" "$home/phases.json"
    t0=$(date +%s.%N)
    (cd "$dir" && env TRITON_CACHE_DIR="$home/triton" FLAGGEMS_CACHE_DIR="$home/fg" \
        GPU_BENCH_RESULT="$home/result.json" PHASE_CLOCK_FILE="$home/phases.json" "$@") >"$OUT/logs/$name.log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    "$python" "$root/tests/gpu/e2e_report.py" --run "$name" "$case" "$variant" "$mode" "$rep" "$rc" "$t0" "$t1" \
        "$OUT/logs/$name.log" "$home/result.json" "$home/phases.json" >>"$runs"
    # tests/gpu's result file whole (percentiles, the GPU's time alone), beside the run's log
    [ ! -f "$home/result.json" ] || cp "$home/result.json" "$OUT/logs/$name.result.json"
    say "$name: rc $rc in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"
}

bench_dtype() { case $1 in mm) echo float16 ;; addmm) echo bfloat16 ;; esac; }
# The case's pytest arguments, into the array case_args.
case_argv() {
    if [ "$1" = triton ]; then
        case_args=(-m pytest -q -s test_triton_bench.py --shape_file "$shapes/triton.yaml")
    else
        local tests
        tests=$(flaggems_test "$flaggems" "$1") || exit 2
        mapfile -t case_args <<<"$tests"
        case_args=(-m pytest -q -s "${case_args[@]}" --dtypes "$(bench_dtype "$1")" --shape_file "$shapes/$1.yaml"
                   --level core --warmup 100 --iter 100 --record log)
    fi
}
# The op FlagGems' benchmark and tests/gpu's conftest read.
case_op() { if [ "$1" = triton ]; then echo gpu_triton; else echo "$1"; fi; }

IFS=, read -r -a case_list <<<"$cases"
IFS=, read -r -a mode_list <<<"$modes"
IFS=, read -r -a variant_list <<<"$variants"
base=/tmp/e2e
rm -rf "$base"
# The shape files outside this repo: pytest loads the conftest.py beside any argument that names
# an existing path, so a --shape_file in tests/gpu would load tests/gpu/conftest.py into FlagGems'.
shapes=$base/shapes
mkdir -p "$shapes"
cp tests/gpu/e2e_shapes_mm.yaml "$shapes/mm.yaml"
cp tests/gpu/e2e_shapes_addmm.yaml "$shapes/addmm.yaml"
cp tests/gpu/shapes.yaml "$shapes/triton.yaml"
tgpu=$base/tgpu
mkdir -p "$tgpu"
cp tests/gpu/conftest.py tests/gpu/gpu_bench_kernels.py tests/gpu/test_triton_bench.py "$tgpu/"
clock=()
if [ "$phases" = 1 ]; then
    mkdir -p "$base/plugins"
    cp tests/gpu/phase_clock.py "$base/plugins/"
    export PYTHONPATH=$base/plugins${PYTHONPATH:+:$PYTHONPATH} TRITON_PRINT_AUTOTUNING=1
    clock=(-p phase_clock)
fi
turn=0  # --alternate: the runs of modes so far, whose parity orders the variants
for rep in $(seq 1 "$repeat"); do
for case in "${case_list[@]}"; do
    case_argv "$case"
    # shellcheck disable=SC2206  # --extra's words, split on purpose
    argv=("$python" "${case_args[@]}" "${clock[@]}" $extra)
    op=$(case_op "$case")
    for mode in "${mode_list[@]}"; do
        if [ $((SECONDS - start)) -gt "$budget" ]; then say "budget spent: $case $mode (repetition $rep) not run"; continue; fi
        store=()
        [ "$mode" != mem ] || store=(FLAGGEMS_DB_URL=sqlite:///:memory:)
        order=("${variant_list[@]}")
        if [ "$alternate" = 1 ] && [ $((turn++ % 2)) = 1 ]; then
            order=()
            for ((i = ${#variant_list[@]} - 1; i >= 0; i--)); do order+=("${variant_list[i]}"); done
        fi
        for variant in "${order[@]}"; do
            home=$base/${variant}_${case}_r$rep
            warmup=("$root/scripts/warmup" --gpus "$gpus" --entry BlasBenchmark)
            knobs=()
            case $variant in
                full) warmup+=(--no-race) ;;
                history) knobs=(WARMUP_HARNESS_RACE_HISTORY=3) ;;
                serial) warmup+=(--no-race); knobs=(WARMUP_HARNESS_COMPILE_OVERLAP=0) ;;
                audit) knobs=(WARMUP_HARNESS_RACE_AUDIT="$OUT/logs/audit_${case}_${mode}_r$rep.jsonl"
                              WARMUP_HARNESS_RACE_HISTORY=0) ;;
            esac
            if [ "$variant" = plain ] || [ "$variant" = nohook ]; then
                hooks=()
                [ "$variant" = plain ] || hooks=(-p no:warmup_harness)
                run "${variant}_${case}_${mode}_r$rep" "$case" "$variant" "$mode" "$rep" "$home" -- \
                    env FLAGGEMS_PERF_CURRENT_OP="$op" "${store[@]}" "${argv[@]}" "${hooks[@]}"
            else
                run "${variant}_${case}_${mode}_r$rep" "$case" "$variant" "$mode" "$rep" "$home" -- \
                    env FLAGGEMS_PERF_CURRENT_OP="$op" FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR="$home/rec" \
                    "${store[@]}" "${knobs[@]}" "${warmup[@]}" -- "${argv[@]}"
            fi
        done
    done
done
done

"$python" "$root/tests/gpu/e2e_report.py" --table "$runs" >"$OUT/e2e.md" && cat "$OUT/e2e.md"
if compgen -G "$OUT/logs/audit_*.jsonl" >/dev/null; then
    "$python" "$root/tests/gpu/race_audit.py" "$OUT"/logs/audit_*.jsonl >"$OUT/audit.md" && cat "$OUT/audit.md"
fi
tar -czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$OUT/logs"
say "done"
