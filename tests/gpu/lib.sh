# shellcheck shell=bash
# tests/gpu/lib.sh: what the device-call scripts share (sourced, not run).

# install_wheels PYTHON: the carried .whl/*.whl into /tmp/site, as the device README says (that
# machine reaches no registry: no dependency resolution, a private target). The caller puts
# /tmp/site on PYTHONPATH where its runs want it.
install_wheels() {
    "$1" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl
}

# flaggems_test DIR OP: the pytest arguments, one a line, that run OP's BLAS benchmark in the
# FlagGems checkout DIR, told by what it has: FlagGems 5.3 and later keep one file per op
# (benchmark/test_mm.py, whose test_mm is the BlasBenchmark), 5.0 one file for every BLAS op
# (benchmark/test_blas_perf.py). Neither: status 2, one line.
flaggems_test() {
    if [ -f "$1/benchmark/test_$2.py" ]; then
        printf '%s\n' "benchmark/test_$2.py::test_$2" -m "$2"
    elif [ -f "$1/benchmark/test_blas_perf.py" ]; then
        printf '%s\n' benchmark/test_blas_perf.py -m "$2" -k test_blas_benchmark
    else
        echo "$1 holds neither benchmark/test_$2.py (FlagGems 5.3 and later) nor benchmark/test_blas_perf.py (5.0): give a FlagGems checkout" >&2
        return 2
    fi
}

# flaggems_path DIR: DIR/src first on PYTHONPATH where the checkout carries flag_gems itself
# (5.3 is not on PyPI; flag_gems is pure Python), so its runs import it and not a wheel's.
flaggems_path() {
    [ ! -d "$1/src/flag_gems" ] || export PYTHONPATH=$1/src${PYTHONPATH:+:$PYTHONPATH}
}
