#!/usr/bin/env bash
# prepare.sh: everything a GPU call needs that only this machine can make, in ignored folders of
# the repo root, for `carry`:
#   .bin/  every warmup-* tool, release builds, stripped (built here: the GPU machine has no
#          cargo; this machine's glibc is older than the GPU image's, so they run there)
#   .whl/  flag-gems and the wheels it needs (fetch_wheels.sh), and the harness as a wheel, so that
#          the GPU machine installs it as a user would and its pytest11 entry point loads it
# Then prints what to carry and how big it is (a call carries 64 MiB at most).
#
# usage: tests/gpu/prepare.sh    (from anywhere; works in the repo the GPU calls are made from)

set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
python=${PYTHON:-python3}

for dir in .bin .whl; do
    if ! git check-ignore -q "$dir/x"; then
        echo "prepare: $dir is not ignored by git here; adding /$dir/ to .git/info/exclude" >&2
        printf '/%s/\n' "$dir" >>"$(git rev-parse --git-common-dir)/info/exclude"
    fi
done

cargo build --release --workspace --locked
mkdir -p .bin
rm -f .bin/warmup-*
for tool in target/release/warmup-*; do  # every tool the workspace builds (not cargo's .d files)
    [ -x "$tool" ] && [ "${tool%.d}" = "$tool" ] || continue
    cp "$tool" ".bin/${tool##*/}"
    strip ".bin/${tool##*/}"
done

rm -rf .whl
PYTHON=$python tests/gpu/fetch_wheels.sh .whl
if [ -f harness/pyproject.toml ]; then
    "$python" -m pip wheel --quiet --disable-pip-version-check --no-deps -w .whl ./harness
else
    echo "prepare: no harness/pyproject.toml: the GPU call will find no harness" >&2
fi

echo
du -sh .bin .whl
echo "carry: [\".bin\", \".whl\"]  (together with the tracked tree: $(git ls-files -z | du -ch --files0-from=- | tail -1 | cut -f1))"
