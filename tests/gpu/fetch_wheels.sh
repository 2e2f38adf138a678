#!/usr/bin/env bash
# fetch_wheels.sh: download, here, the wheels the GPU machine lacks into the repo's ignored .whl/
# (the GPU machine reaches no package registry; the device call carries .whl and installs them
# with pip --no-index --no-deps --target, as run_proof.sh does).
#
#   flag-gems 5.0.2   --no-deps: its pins (torch 2.9, numpy 1.26, PyYAML 6.0.3, packaging 26.0)
#                     would replace the image's torch 2.11 and numpy; the image's own versions run it
#   sqlalchemy 2.0.48 the one flag-gems needs that the image lacks (its config store)
#   greenlet          sqlalchemy's declared need on x86-64 (only its asyncio parts use it)
#   typing-extensions sqlalchemy's other need: the image has it, so it is not fetched
#
# The image's Python is 3.12 (KINDS.md), so wheels are chosen for cp312 manylinux x86-64.
# usage: tests/gpu/fetch_wheels.sh [DEST]   (default: .whl in the repo root)

set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dest=${1:-$root/.whl}
python=${PYTHON:-python3}
mkdir -p "$dest"

fetch() {
    "$python" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
        --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
        --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
        -d "$dest" "$@"
}

fetch flag-gems==5.0.2
fetch sqlalchemy==2.0.48
fetch 'greenlet>=1'

# One version of each: two wheels of one project stop the whole install there.
dupes=$(find "$dest" -maxdepth 1 -name '*.whl' -printf '%f\n' | cut -d- -f1 | tr 'A-Z-' 'a-z_' | sort | uniq -d)
if [ -n "$dupes" ]; then
    echo "fetch_wheels: $dest holds two versions of: $dupes; remove the older ones" >&2
    exit 1
fi
for w in "$dest"/flag_gems-*.whl; do
    unzip -p "$w" '*/METADATA' | grep '^Requires-Dist' | grep -v 'extra ==' | sed 's/^/fetch_wheels: flag-gems needs /' >&2
done
ls -l "$dest"
