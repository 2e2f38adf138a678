# shellcheck shell=bash
# tests/gpu/lib.sh: what the device-call scripts share (sourced, not run).

# install_wheels PYTHON: the carried .whl/*.whl into /tmp/site, as the device README says (that
# machine reaches no registry: no dependency resolution, a private target). The caller puts
# /tmp/site on PYTHONPATH where its runs want it.
install_wheels() {
    "$1" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl
}
