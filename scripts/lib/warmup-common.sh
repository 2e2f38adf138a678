# shellcheck shell=bash
# Checked alone, its variables look unused or unset: the scripts set `here` and `bin` and read
# what it fills in (shellcheck follows it from each script, where they are checked).
# shellcheck disable=SC2034,SC2154
# warmup-common.sh: what scripts/warmup and scripts/warmup-slurm share, sourced by both (it runs
# nothing of its own): their messages, where the tools are, the options both pass on to a tool
# unchanged, and the one reader of the tools' run summaries. Each script sets PROG (its name, for
# usage errors) and TAG (its prefix, for what it says) before sourcing this, and `here` (its own
# folder).
#
# Every decision that needs parsing is a tool's: the scripts ask warmup-shard and warmup-spawn
# (--check-args, --dry-run, --print-shape-file, --list-devices, --lock-scratch, --summary)
# and decide from the answers; scripts/warmup ends in warmup-spawn --measure.

say() { printf '%s %s\n' "$TAG" "$*" >&2; }

die_usage() {
    printf '%s: %s\n' "$PROG" "$1" >&2
    printf "%s: run '%s --help' for usage\n" "$PROG" "$PROG" >&2
    exit 2
}

# Prints the folder of the warmup-* tools: WARMUP_BIN_DIR, beside the script (installed), the
# repository's target/release or target/debug, else PATH. Fails when there are none.
find_bin_dir() {
    local d
    for d in "${WARMUP_BIN_DIR-}" "$here" "$here/../target/release" "$here/../target/debug"; do
        if [ -n "$d" ] && [ -x "$d/warmup-shard" ]; then
            (cd -- "$d" && pwd)
            return
        fi
    done
    d=$(command -v warmup-shard) && dirname -- "$d"
}

# --- the options passed on to a tool unchanged: the one table --------------------------------
# NAME -> the tool that takes it. Each takes a value (--NAME VALUE or --NAME=VALUE) but the flags.
declare -Ar WARMUP_PASSED=(
    [--entry]=shard [--strategy]=shard [--costs]=shard [--cost-model]=shard [--overhead]=shard
    [--backend]=spawn [--timeout]=spawn [--grace]=spawn [--max-log]=spawn
    [--cache-per-child]=spawn
)
declare -Ar WARMUP_PASSED_FLAGS=([--cache-per-child]=1)

shard_args=()        # what warmup-shard is passed, as given
spawn_args=()        # what warmup-spawn is passed, as given
declare -A passed=() # each passed option's last value, by NAME
taken=0              # how many arguments take_passed took

# Takes "$1" (and its value) into shard_args or spawn_args when the table has it; sets `taken`.
# Fails, taking nothing, when it is no option of the table.
take_passed() {
    local name=${1%%=*}
    local tool=${WARMUP_PASSED[$name]-}
    [ -n "$tool" ] || return 1
    local -n into=${tool}_args
    if [ -n "${WARMUP_PASSED_FLAGS[$name]-}" ]; then
        [ "$name" = "$1" ] || die_usage "$name takes no value"
        into+=("$1") passed[$name]=1 taken=1
    elif [ "$name" != "$1" ]; then
        into+=("$1") passed[$name]=${1#*=} taken=1
    else
        [ $# -ge 2 ] || die_usage "$1 needs a value"
        into+=("$1" "$2") passed[$name]=$2 taken=2
    fi
}

# The usage check of what the tools will be passed (shard_args, spawn_args and "$@" for
# warmup-spawn), by the tools' own parsers: exit 2 on a refusal, which the tool has named.
check_passed() {
    if ! "$bin/warmup-shard" --check-args "${shard_args[@]}" ||
        ! "$bin/warmup-spawn" --check-args "${spawn_args[@]}" "$@"; then
        printf "%s: run '%s --help' for usage\n" "$PROG" "$PROG" >&2
        exit 2
    fi
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
