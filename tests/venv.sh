#!/usr/bin/env bash
# The test virtualenvs, reused across clones: LINK (e.g. .venv) becomes a link to a virtualenv in
# the cache folder that holds exactly PYTHON, the REQUIREMENTS file's pins and the PIP_SPECs, made
# once per distinct set of those and then reused by every clone and every run.
#
#   tests/venv.sh LINK PYTHON REQUIREMENTS [PIP_SPEC...]
#
# The cache folder is $PARALLEL_WARMUP_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/parallel-warmup.
# A virtualenv there is named by a hash of its inputs: this script's layout version, PYTHON's real
# path, version and machine, the requirements file's text and the PIP_SPECs; change any of them and
# another is made beside it. It is built in a folder of its own (venv-HASH.d.RANDOM: its scripts
# name that folder, so it never moves) and published by renaming a link venv-HASH onto it, under a
# lock: a build that is killed leaves an unlinked folder that is never used (the next build for that
# hash removes it), and two builds of one hash at once make it once. pip's own download cache is
# left on, so a new hash downloads only what it has not downloaded before.
set -euo pipefail

LAYOUT=1 # bump when the way a virtualenv is made changes, so that none made before is reused

die() {
    echo "tests/venv.sh: $*" >&2
    exit 1
}

[ $# -ge 3 ] || die "usage: tests/venv.sh LINK PYTHON REQUIREMENTS [PIP_SPEC...]"
link=$1 python=$2 requirements=$3
shift 3
[ -f "$requirements" ] || die "$requirements: no such file (the requirements to install)"

cache=${PARALLEL_WARMUP_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/parallel-warmup}
mkdir -p "$cache" || die "$cache: cannot make the cache folder; set PARALLEL_WARMUP_CACHE to one you can write"
cache=$(cd "$cache" && pwd -P)

identity=$("$python" -c 'import os, platform, sys
print(os.path.realpath(sys.executable)); print(sys.version); print(platform.machine())') ||
    die "$python: cannot run it to learn its version (set PYTHON=... to a Python 3)"
key=$({
    echo "layout $LAYOUT"
    printf '%s\n' "$identity"
    cat "$requirements"
    printf 'spec %s\n' "$@"
} | sha256sum | cut -c1-16)
venv=$cache/venv-$key

usable() { [ -L "$venv" ] && [ -e "$venv/.complete" ] && "$venv/bin/python" -c '' 2>/dev/null; }

if ! usable; then
    # One build per hash at a time; the others wait here, then find it made.
    exec 9>"$venv.lock"
    if command -v flock >/dev/null; then flock 9; fi
    if ! usable; then
        # Under the lock nothing builds this hash, so any folder of it that no link names is a
        # killed build's, or a broken one's (its Python gone): remove them.
        current=$(readlink "$venv" 2>/dev/null || true)
        for old in "$venv".d.*; do
            [ -e "$old" ] || continue
            [ -n "$current" ] && [ "$(basename "$old")" = "$current" ] && [ -e "$old/.complete" ] &&
                "$old/bin/python" -c '' 2>/dev/null && continue
            rm -rf "$old"
        done
        echo "tests/venv.sh: making $venv (${*:+$* and }$requirements, $(printf '%s' "$identity" | head -n1))" >&2
        build=$(mktemp -d "$venv.d.XXXXXX")
        chmod 755 "$build" # mktemp's 700, where python -m venv would make it 755
        "$python" -m venv "$build"
        "$build/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements" "$@" ||
            die "pip could not install $requirements${*:+ and $*} into $build (above); nothing was published"
        touch "$build/.complete"
        ln -sfn "$(basename "$build")" "$venv.new.$$"
        mv -T "$venv.new.$$" "$venv"
    fi
    exec 9>&-
fi

# LINK: a link to the cached virtualenv. A real folder there was made before the cache; it is
# moved aside, not removed, since a process may still be running from it.
if [ -d "$link" ] && [ ! -L "$link" ]; then
    aside="$link.pre-cache.$$"
    mv -T "$link" "$aside"
    echo "tests/venv.sh: $link was a folder of its own; moved it to $aside (remove it when nothing runs from it)" >&2
fi
mkdir -p "$(dirname "$link")"
if [ "$(readlink "$link" 2>/dev/null || true)" != "$venv" ]; then
    ln -sfn "$venv" "$link.new.$$"
    mv -T "$link.new.$$" "$link"
fi
