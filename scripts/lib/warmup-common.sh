# shellcheck shell=bash
# Checked alone, its variables look unused or unset: the scripts set `here` and `bin` and read
# what it fills in (shellcheck follows it from each script, where they are checked).
# shellcheck disable=SC2034,SC2154
# warmup-common.sh: what scripts/warmup and scripts/warmup-slurm share, sourced by both (it runs
# nothing of its own): their messages, where the tools are, and the one reader of the tools' run
# summaries. Each script sets PROG (its name, for usage errors) and TAG (its prefix, for what it
# says) before sourcing this, and `here` (its own folder).
#
# Every decision is a tool's: warmup-plan parses both scripts' options and decides
# (docs/CONTRACT.md, "warmup-plan"); the scripts eval its answer and compose the steps it names,
# and scripts/warmup ends in warmup-spawn --measure.

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

# Prints the folder of the warmup-* tools: WARMUP_BIN_DIR, beside the script (installed), the
# repository's target/release or target/debug, else PATH. Fails when there are none.
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

# --- run summaries ------------------------------------------------------------------------------
# Reads a run summary (docs/CONTRACT.md, "Run summaries") from stdin: `summary[NAME]` is the rest
# of NAME's line; each `shard INDEX OUTCOME LOG` line sets `shard_outcome[INDEX]` and
# `shard_log[INDEX]`. Each line is split at spaces up to its last field only, so a path keeps
# all it holds. Fails unless it is version 1.
declare -A summary=() shard_outcome=() shard_log=()
read_summary() {
    summary=() shard_outcome=() shard_log=()
    local line name rest index
    while IFS= read -r line; do
        name=${line%% *} rest=${line#* }
        case $name in
            shard)
                index=${rest%% *} rest=${rest#* }
                shard_outcome[$index]=${rest%% *} shard_log[$index]=${rest#* }
                ;;
            *) summary[$name]=$rest ;;
        esac
    done
    [ "${summary[version]-}" = 1 ]
}
