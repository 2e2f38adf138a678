#!/usr/bin/env bash
# bench_compile.sh: issue 10's benchmark, one device call: the precompile micro-benchmark
# (bench_precompile.py: Triton's own path vs threads vs processes), then per benchmark the serial
# sweep (precompile off), the plugin's design (scripts/warmup --cache-per-child, precompile off)
# and ours (the harness's defaults: the children share one Triton cache, precompile in processes,
# one timing at a time per device): sweep wall time, speedup over serial, where each child's time
# went, and the replayed latency of the picks against the serial picks (proof.py's tables).
#
#   2 GPUs:    serial, plugin2, ours2, ours1x2 (the last on GPU 0 alone, two children)
#   --one-gpu: serial, plugin1x2, ours1x2, ours1x4 (--devices 0,0 and 0,0,0,0)
#
# usage: tests/gpu/bench_compile.sh [--one-gpu] [run_proof.sh options; a later --variants wins]

set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
variants=serial,plugin2,ours2,ours1x2
for arg in "$@"; do
    if [ "$arg" = --one-gpu ]; then variants=serial,plugin1x2,ours1x2,ours1x4; fi
done
exec "$here/run_proof.sh" --micro --variants "$variants" "$@"
