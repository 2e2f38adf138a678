#!/usr/bin/env bash
# Benchmark (not a test) of warmup-spawn's own cost, release build:
#  1. 64 shards of `true` on 8 listed devices: wall time, and the spawner's overhead per child
#     (wall time / 64: `true` itself costs next to nothing, so this is fork+exec+reap+status.json);
#  2. 8 shards of a 0.2-0.9 s sleep on 4 listed devices, with the summary warmup-spawn prints.
# Usage: tests/bench/bench_spawn.sh   (CARGO_TARGET_DIR is honoured)
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
cargo build --release -p spawn --quiet --manifest-path "$root/Cargo.toml"
bin=$target/release/warmup-spawn

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# plan DIR N: N shard files and a v1 plan under DIR.
plan() {
    local dir=$1 n=$2 i shards=""
    for ((i = 0; i < n; i++)); do
        mkdir -p "$dir/w$i"
        printf 'mm:\n  shapes:\n  - [%d]\n' "$i" >"$dir/w$i/shapes.yaml"
        shards+="${shards:+,}{\"index\":$i,\"shape_file\":\"w$i/shapes.yaml\",\"shapes\":[$i]}"
    done
    printf '{"version":1,"op":"mm","source":"/bench.yaml","strategy":"round-robin","shapes":%d,"shards":[%s]}\n' \
        "$n" "$shards" >"$dir/plan.json"
}

now_ns() { date +%s%N; }

plan "$scratch/a" 64
runs=5 best=
for ((r = 0; r < runs; r++)); do
    t0=$(now_ns)
    "$bin" --plan "$scratch/a/plan.json" --backend cuda --devices 0,1,2,3,4,5,6,7 -- true 2>/dev/null
    t=$(($(now_ns) - t0))
    if [[ -z $best || $t -lt $best ]]; then best=$t; fi
done
awk -v ns="$best" 'BEGIN { printf "64 shards of true on 8 devices: best of 5 wall %.1f ms, %.2f ms per child\n", ns / 1e6, ns / 64 / 1e6 }'

plan "$scratch/b" 8
echo "8 shards on 4 devices (sleep 0.2 + 0.1 * shard s):"
# shellcheck disable=SC2016 # the child expands it
"$bin" --plan "$scratch/b/plan.json" --backend cuda --devices 0,1,2,3 -- \
    sh -c 'i=${FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR%/rec}; i=${i##*/w}; sleep "0.$((2 + i))"'
