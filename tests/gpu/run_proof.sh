#!/usr/bin/env bash
# run_proof.sh: the GPU proof of issues 9 and 10, one device call end to end.
#
# On the GPU machine, from the repo root, with .bin and .whl carried (tests/gpu/prepare.sh made
# them here): installs the carried wheels (flag-gems, sqlalchemy, the harness) into /tmp/site,
# checks the GPUs and the tools, optionally runs the precompile micro-benchmark, then for each
# benchmark runs tests/gpu/proof.py: a serial sweep, the warmup variants, the replays, the tables.
# Everything lands in $OUT (at most 8 files come back: run.log, bench_precompile.json, and
# proof_<bench>.md/.json + logs_<bench>.tar.gz per benchmark).
#
# usage: tests/gpu/run_proof.sh [--bench triton,flaggems,flaggems-dtypes] [--variants LIST] [--one-gpu]
#            [--budget SECS] [--precompile-mode processes|threads] [--compile-workers N]
#            [--preload MODULES] [--micro] [--micro-args 'ARGS'] [--serial-from DIR] [--dry]
#
#   --bench LIST      proof.py benchmarks, comma-separated (default triton,flaggems);
#                     flaggems-dtypes (FlagGems' mm in three dtypes) sweeps serially for about
#                     430 s: give it a call of its own, then --serial-from for the variants
#   --variants LIST   proof.py variants (default: serial,plugin2,ours2; with --one-gpu or a
#                     machine of one GPU: serial,plugin1x2,ours1x2). serial: precompile off;
#                     pluginG[xC]: --cache-per-child, precompile off; oursG[xC]: the harness's
#                     defaults (shared cache, precompile, timing locks)
#   --precompile-mode the harness's WARMUP_HARNESS_PRECOMPILE in ours and serial-pc (default
#                     processes)
#   --compile-workers WARMUP_HARNESS_COMPILE_WORKERS there (default: the harness's, the CPUs
#                     divided among the children running at once)
#   --preload MODULES WARMUP_HARNESS_COMPILE_PRELOAD there (default: the harness's, torch), e.g.
#                     torch,flag_gems: the workers import FlagGems while pytest collects
#   --one-gpu         sweep on GPU 0 only (--devices 0,0), when only one GPU is lent
#   --budget SECS     the whole call's time (default 560: a device call stops at 600)
#   --micro           first run bench_precompile.py (issue 10's compile micro-benchmark)
#   --serial-from DIR take each benchmark's serial sweep from DIR/proof_<bench>.json (an earlier
#                     call's output, carried back) instead of sweeping serially again
#   --dry             no GPU: the CPU dry bench (test_dry_bench.py) through the same steps

set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit 2
start=$SECONDS

benches=triton,flaggems
variants=
one_gpu=0
budget=560
precompile_mode=processes
compile_workers=
preload=
micro=0
micro_args=
serial_from=
dry=0
while [ $# -gt 0 ]; do
    case $1 in
        --bench) benches=$2; shift 2 ;;
        --variants) variants=$2; shift 2 ;;
        --one-gpu) one_gpu=1; shift ;;
        --budget) budget=$2; shift 2 ;;
        --precompile-mode) precompile_mode=$2; shift 2 ;;
        --compile-workers) compile_workers=$2; shift 2 ;;
        --preload) preload=$2; shift 2 ;;
        --micro) micro=1; shift ;;
        --micro-args) micro_args=$2; shift 2 ;;
        --serial-from) serial_from=$2; shift 2 ;;
        --dry) dry=1; shift ;;
        -h | --help) sed -n '2,/^$/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "run_proof: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done

OUT=${OUT:-$root/gpu_out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/run.log") 2>&1
say() { printf '[run_proof %4ss] %s\n' "$((SECONDS - start))" "$*"; }
python=${PYTHON:-python3}

# --- the software the proof needs --------------------------------------------------------------
say "repo $(git rev-parse --short HEAD 2>/dev/null || echo '?') in $root; $(nproc) CPUs; $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
if [ "$dry" = 0 ]; then
    if compgen -G ".whl/*.whl" >/dev/null; then
        # shellcheck source=tests/gpu/lib.sh
        . "$root/tests/gpu/lib.sh"
        if ! install_wheels "$python"; then
            say "FAILED to install the carried wheels (.whl); is .whl in carry?"
            exit 1
        fi
        export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
        say "installed: $(find .whl -maxdepth 1 -name '*.whl' -printf '%f ')"
    else
        say "no .whl/*.whl: carry .whl (tests/gpu/prepare.sh makes it); the flaggems bench needs it"
    fi
fi
entry_point='import importlib.metadata as m, sys
sys.exit(not any(e.name == "warmup_harness" for e in m.entry_points(group="pytest11")))'
if ! "$python" -c "$entry_point"; then
    # Not installed as a package (no pytest11 entry point): load it by name, from the tree if need
    # be; pytest's -p in PYTEST_ADDOPTS reaches every child too.
    if ! "$python" -c 'import warmup_harness' 2>/dev/null; then
        if [ ! -d harness/warmup_harness ]; then
            say "FAILED: no warmup_harness, neither installed nor in harness/"
            exit 1
        fi
        export PYTHONPATH=$root/harness${PYTHONPATH:+:$PYTHONPATH}
    fi
    export PYTEST_ADDOPTS="${PYTEST_ADDOPTS:+$PYTEST_ADDOPTS }-p warmup_harness"
    say "harness: $("$python" -c 'import warmup_harness as h; print(h.__file__)'), loaded with -p (not installed)"
fi

for dir in "${WARMUP_BIN_DIR-}" "$root/.bin" "$root/target/release" "$root/target/debug"; do
    if [ -n "$dir" ] && [ -x "$dir/warmup-shard" ]; then
        export WARMUP_BIN_DIR=$dir
        break
    fi
done
if [ -z "${WARMUP_BIN_DIR-}" ] || ! "$WARMUP_BIN_DIR/warmup-shard" --version >/dev/null; then
    say "FAILED: the warmup-* tools do not run here (carry .bin, made by tests/gpu/prepare.sh)"
    exit 1
fi
say "tools: $WARMUP_BIN_DIR ($("$WARMUP_BIN_DIR/warmup-shard" --version))"

# --- the GPUs ----------------------------------------------------------------------------------
backend_args=()
if [ "$dry" = 1 ]; then
    gpus=1
    benches=dry
    backend_args=(--backend cuda)
    say "dry run: no GPU, the CPU dry bench through the same steps"
else
    nvidia-smi -L || { say "FAILED: nvidia-smi -L"; exit 1; }
    gpus=$(nvidia-smi -L | grep -c '^GPU ')
    say "GPUs seen by nvidia-smi: $gpus; warmup-spawn lists: $("$WARMUP_BIN_DIR/warmup-spawn" --list-devices | tr '\n' ' ')"
    "$python" - <<'PY' || { say "FAILED: torch/triton cannot use the GPU"; exit 1; }
import torch, triton
print(f"torch {torch.__version__}, triton {triton.__version__}, {torch.cuda.device_count()} device(s):",
      ", ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())))
try:
    import flag_gems
    print(f"flag_gems {flag_gems.__version__}")
except Exception as exc:
    print(f"flag_gems does not import: {type(exc).__name__}: {exc}")
import warmup_harness
print(f"warmup_harness {warmup_harness.__version__} from {warmup_harness.__file__}")
PY
fi
if [ "$one_gpu" = 1 ] && [ "$gpus" -gt 1 ]; then
    gpus=1
fi
if [ -z "$variants" ]; then
    if [ "$gpus" -ge 2 ]; then variants=serial,plugin2,ours2; else variants=serial,plugin1x2,ours1x2; fi
fi
say "variants: $variants; precompile for 'ours': $precompile_mode x${compile_workers:-default}"

# --- issue 10's micro-benchmark ----------------------------------------------------------------
left() { echo $((budget - (SECONDS - start))); }
if [ "$micro" = 1 ] && [ "$dry" = 0 ]; then
    micro_budget=$(( $(left) / 4 ))
    [ "$micro_budget" -le 150 ] || micro_budget=150
    say "precompile micro-benchmark (budget ${micro_budget}s)"
    # shellcheck disable=SC2086  # micro_args is a list of words on purpose
    timeout --signal=TERM --kill-after=15 "$((micro_budget + 60))" \
        "$python" tests/gpu/bench_precompile.py --out "$OUT" --budget "$micro_budget" $micro_args \
        || say "bench_precompile.py exited $?"
fi

# --- the proof, one benchmark after another ----------------------------------------------------
IFS=, read -r -a bench_list <<<"$benches"
n=${#bench_list[@]}
for bench in "${bench_list[@]}"; do
    share=$(( $(left) / n ))
    n=$((n - 1))
    args=(--bench "$bench" --gpus "$gpus" --variants "$variants" --precompile-mode "$precompile_mode"
          --budget "$share" --out "$OUT" "${backend_args[@]}")
    [ -z "$compile_workers" ] || args+=(--compile-workers "$compile_workers")
    [ -z "$preload" ] || args+=(--preload "$preload")
    if [ -n "$serial_from" ]; then
        if [ -f "$serial_from/proof_$bench.json" ]; then
            args+=(--serial-baseline "$serial_from/proof_$bench.json")
        else
            say "no $serial_from/proof_$bench.json: $bench sweeps serially here"
        fi
    fi
    say "proof of $bench: ${share}s"
    "$python" tests/gpu/proof.py "${args[@]}" || say "proof.py --bench $bench exited $?"
done

say "done; files in $OUT:"
ls -l "$OUT"
