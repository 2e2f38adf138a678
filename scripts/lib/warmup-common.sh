# shellcheck shell=bash
# Checked alone, its variables look unused or unset: the scripts set `here` and `bin` and read
# what it fills in (shellcheck follows it from each script, where they are checked).
# shellcheck disable=SC2034,SC2154
# warmup-common.sh: what scripts/warmup and scripts/warmup-slurm share, sourced by both (it runs
# nothing of its own): their messages and where the tools are. Each script sets PROG (its name,
# for usage errors) and TAG (its prefix, for what it says) before sourcing this, and `here` (its
# own folder).
#
# Every decision is a tool's: warmup-plan parses both scripts' options and decides
# (docs/CONTRACT.md, "warmup-plan"); the scripts eval its answer and compose the steps it names;
# scripts/warmup ends in warmup-spawn --measure, warmup-slurm's finish is warmup-spawn --finish.

say() { printf '%s %s\n' "$TAG" "$*" >&2; }

die_usage() {
    printf '%s: %s\n' "$PROG" "$1" >&2
    printf "%s: run '%s --help' for usage\n" "$PROG" "$PROG" >&2
    exit 2
}

# COMMAND's program cannot be run: one line, and the shell's status for it, before anything runs
# (warmup-plan says the same when it is there to ask).
die_not_found() {
    printf '%s: COMMAND "%s" not found in PATH (or not executable); give its path or fix PATH\n' "$PROG" "$1" >&2
    exit 127
}

# What warmup-shard's exit 3 means to either script: the op's shapes do not make 2 shards
# (warmup-shard said how many above). Reads `op` and `shape_file`, warmup-plan's.
too_few_shapes() {
    printf 'fewer than 2 shapes for op %s in %s: sharding would not pay off' "$op" "$shape_file"
}

# Prints the folder of the warmup-* tools: WARMUP_BIN_DIR, beside the script (installed), the
# repository's target/release or target/debug, else PATH. Fails when there are none. The order
# the tools find each other in (toolkit/src/tools.rs): the one set by hand first, then where
# the caller itself is (tests/test_warmup.py checks that both follow WARMUP_BIN_DIR first).
find_bin_dir() {
    local d
    for d in "${WARMUP_BIN_DIR-}" "$here" "$here/../target/release" "$here/../target/debug"; do
        if [ -n "$d" ] && [ -x "$d/warmup-plan" ]; then
            (cd -- "$d" && pwd)
            return
        fi
    done
    d=$(command -v warmup-plan) && dirname -- "$d"
}
