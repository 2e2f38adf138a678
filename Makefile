# parallel-warmup: build, demo, test, install.
#   make demo     the whole flow on the bundled example, no GPU needed
#   make test     everything CI runs: cargo tests, clippy, rustfmt, the pytest suite, shellcheck, ruff,
#                 and the harness tests on every Triton the README claims (make test-triton), the
#                 test runs TEST_JOBS at a time
#   make install PREFIX=/usr/local   binaries, the scripts, completions, man pages, the contract
#                                    (share/doc/parallel-warmup/CONTRACT.md), and the harness
#                                    plugin into HARNESS_PYTHON's environment

PYTHON  ?= python3
CARGO   ?= cargo
PREFIX  ?= /usr/local
VENV    := .venv
# CARGO_TARGET_DIR is honoured: the tools are looked for where cargo puts them.
TARGET  := $(or $(CARGO_TARGET_DIR),target)
RELEASE := $(TARGET)/release
DEBUG   := $(TARGET)/debug
TOOLS   := warmup-shard warmup-spawn warmup-merge warmup-publish warmup-costs warmup-plan warmup-cache
# The scripts: scripts/NAME, their shared scripts/lib/warmup-common.sh (installed into
# share/parallel-warmup), their man pages and completions generated from warmup-plan's clap
# definitions of their options (warmup-plan --man|--completions SHELL --for NAME).
SCRIPTS := warmup warmup-slurm
# The Python that runs your benchmarks: `make install` puts the harness plugin (harness/) into its
# environment with pip. HARNESS_PYTHON= (empty) skips that; HARNESS_PIP_FLAGS adds pip options.
HARNESS_PYTHON    ?= $(PYTHON)
HARNESS_PIP_FLAGS ?=

# Before $(MAKE) -jN: a make of its own with N jobs. The caller's jobserver is left out of its
# MAKEFLAGS (GNU make warns "-jN forced in submake" when -jN meets one); every other flag (-n, -k,
# -s, variables set on the command line) passes on. make test runs its steps this way: the tests
# TEST_JOBS at a time, the Triton venvs, which wait on pip and not on the CPU, all at once.
OWN_JOBS = MAKEFLAGS='$(filter-out -j% --jobserver-auth=% --jobserver-fds=%,$(MAKEFLAGS))'

.PHONY: all build venv demo test test-build test-rust test-python test-python-rest test-triton triton-venvs \
	lint lint-rust lint-scripts install install-harness bench clean

all: build

build:
	$(CARGO) build --release --workspace --locked

# The virtualenv the tests and the demo run pytest and PyYAML from: .venv, a link to one kept in
# the cache folder (tests/venv.sh: ${XDG_CACHE_HOME:-~/.cache}/parallel-warmup), made the first
# time and reused by every clone while PYTHON and tests/requirements.txt stay the same.
venv:
	@tests/venv.sh $(VENV) $(PYTHON) tests/requirements.txt

# The demo: 12 shapes of op mm swept on four pretend devices by the fixture harness, then the
# measurement replaying the merged configs. No GPU needed; the sweep cost is simulated. The
# fixture records and replays by itself, without warmup_harness: -p no:warmup_harness says so, and
# the measurement runs after the sweep instead of waiting at the harness's gate alongside it.
demo: build venv
	@rm -rf target/demo && mkdir -p target/demo/records
	FLAGGEMS_PERF_CURRENT_OP=mm \
	FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=$(CURDIR)/target/demo/records \
	WARMUP_FIXTURE_SWEEP_SECONDS=0.2 WARMUP_FIXTURE_SWEEP_COST=numel \
	WARMUP_BIN_DIR=$(abspath $(RELEASE)) \
	scripts/warmup --gpus 4 --devices 0,1,2,3 --backend cuda -- \
		$(VENV)/bin/python -m pytest -q -p no:warmup_harness tests/harness/test_bench.py \
		--shape_file examples/shapes.yaml
	@echo "merged configs: target/demo/records/mm.json"

# make test: first what compiles or installs (the virtualenvs, the debug build, the cargo test
# binaries), then clippy (alone: it would hold cargo's lock while cargo test waits), then every
# test run and the other lints TEST_JOBS at a time, each run's output printed whole when it ends
# (--output-sync), every run even when one fails or clippy did (-k). The .venv run leaves the
# harness tests out: test-triton runs them on every Triton, .venv's 3.6 included.
TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 2)

test:
	@$(OWN_JOBS) $(MAKE) --no-print-directory -j$(TEST_JOBS) venv triton-venvs test-build
	@status=0; \
	$(OWN_JOBS) $(MAKE) --no-print-directory lint-rust || status=1; \
	$(OWN_JOBS) $(MAKE) --no-print-directory -k -j$(TEST_JOBS) --output-sync=target \
		test-python-rest $(TRITONS:%=test-harness-%) test-rust lint-scripts || status=1; \
	if [ $$status != 0 ]; then echo "make test: failed (above)" >&2; fi; exit $$status

# cargo shares make's job slots (the + lines): under make -j it neither oversubscribes the cores nor
# warns that it cannot reach them.
test-build:
	+$(CARGO) build --workspace --locked
	+$(CARGO) test --workspace --locked --no-run

test-rust:
	+$(CARGO) test --workspace --locked

test-python: venv
	$(CARGO) build --workspace --locked
	WARMUP_BIN_DIR=$(abspath $(DEBUG)) $(VENV)/bin/python -m pytest -q -rs

# -rs: the reason for each skip is in the summary (tests/test_slurm.py's, without a Slurm to start).
test-python-rest: venv
	WARMUP_BIN_DIR=$(abspath $(DEBUG)) $(VENV)/bin/python -m pytest -q -rs $(HARNESS_TESTS:%=--ignore=%)

# The harness on every Triton it claims (README.md, "The harness"; harness/warmup_harness/versions.py
# holds the range): the latest patch of each minor, one venv each, .venv-triton/<version>, with only
# tests/requirements-triton.txt and that Triton (links into the cache folder, as .venv is; made
# side by side the first time), then the harness tests in each, TEST_JOBS versions at a time, each
# in a temporary folder of its own, every version run even when one fails, and the failed ones
# named. TRITONS=3.9.0 runs one.
TRITONS       ?= 3.4.0 3.5.1 3.6.0 3.7.1 3.8.0 3.9.0
TRITON_VENV   := .venv-triton
HARNESS_TESTS := tests/test_harness.py tests/test_harness_hooks.py tests/test_harness_versions.py \
                 tests/test_harness_fingerprint.py tests/test_harness_hot_path.py \
                 tests/test_precompile.py

triton-venv-%:
	@tests/venv.sh $(TRITON_VENV)/$* $(PYTHON) tests/requirements-triton.txt triton==$*

triton-venvs:
	@$(OWN_JOBS) $(MAKE) --no-print-directory -j$(words $(TRITONS)) $(TRITONS:%=triton-venv-%)

test-triton: triton-venvs
	$(CARGO) build --workspace --locked
	@$(OWN_JOBS) $(MAKE) --no-print-directory -k -j$(TEST_JOBS) --output-sync=target $(TRITONS:%=test-harness-%) || \
		{ echo "test-triton: the harness tests failed on a Triton (named above)" >&2; exit 1; }

# One Triton's harness tests (its venv and the debug build made first). Its own --basetemp: runs
# side by side never share a temporary folder; it is removed when the run passes.
test-harness-%: triton-venv-%
	@echo "test-triton: Triton $*"
	@tmp=$$(mktemp -d "$${TMPDIR:-/tmp}/pw-triton-$*.XXXXXX") && \
	if WARMUP_BIN_DIR=$(abspath $(DEBUG)) $(TRITON_VENV)/$*/bin/python -m pytest -q \
		--basetemp="$$tmp/t" $(HARNESS_TESTS); then rm -rf "$$tmp"; \
	else echo "test-triton: the harness tests failed on Triton $* (above; their files: $$tmp)" >&2; exit 1; fi

lint: lint-rust lint-scripts

lint-rust:
	+$(CARGO) clippy --workspace --all-targets --locked -- -D warnings
	$(CARGO) fmt --all --check

lint-scripts: venv
	$(VENV)/bin/shellcheck scripts/warmup scripts/warmup-slurm scripts/lib/*.sh .ci/run \
		tests/gpu/*.sh tests/venv.sh
	$(VENV)/bin/ruff check harness tests

# RELEASE=target/debug installs a debug build without building a release one (the tests do).
install: $(if $(filter $(TARGET)/release,$(RELEASE)),build) $(if $(HARNESS_PYTHON),install-harness)
	@set -e; dest="$(DESTDIR)$(PREFIX)"; \
	install -d "$$dest/bin" "$$dest/share/man/man1" "$$dest/share/bash-completion/completions" \
		"$$dest/share/zsh/site-functions" "$$dest/share/fish/vendor_completions.d"; \
	install -d "$$dest/share/doc/parallel-warmup"; \
	install -m 644 docs/CONTRACT.md "$$dest/share/doc/parallel-warmup/CONTRACT.md"; \
	for t in $(TOOLS); do \
		install -m 755 "$(RELEASE)/$$t" "$$dest/bin/$$t"; \
		WARMUP_DOC_DIR="$(PREFIX)/share/doc/parallel-warmup" \
			"$(RELEASE)/$$t" --generate=man > "$$dest/share/man/man1/$$t.1"; \
		"$(RELEASE)/$$t" --generate=bash > "$$dest/share/bash-completion/completions/$$t"; \
		"$(RELEASE)/$$t" --generate=zsh > "$$dest/share/zsh/site-functions/_$$t"; \
		"$(RELEASE)/$$t" --generate=fish > "$$dest/share/fish/vendor_completions.d/$$t.fish"; \
	done; \
	install -d "$$dest/share/parallel-warmup"; \
	install -m 644 scripts/lib/warmup-common.sh "$$dest/share/parallel-warmup/warmup-common.sh"; \
	for s in $(SCRIPTS); do \
		install -m 755 "scripts/$$s" "$$dest/bin/$$s"; \
		WARMUP_DOC_DIR="$(PREFIX)/share/doc/parallel-warmup" \
			"$(RELEASE)/warmup-plan" --man --for "$$s" > "$$dest/share/man/man1/$$s.1"; \
		"$(RELEASE)/warmup-plan" --completions bash --for "$$s" > "$$dest/share/bash-completion/completions/$$s"; \
		"$(RELEASE)/warmup-plan" --completions zsh --for "$$s" > "$$dest/share/zsh/site-functions/_$$s"; \
		"$(RELEASE)/warmup-plan" --completions fish --for "$$s" > "$$dest/share/fish/vendor_completions.d/$$s.fish"; \
	done; \
	echo "installed into $$dest"

# pip builds the harness inside harness/ (build/, *.egg-info): one build there at a time, for the
# harness tests of several Tritons running side by side.
install-harness:
	$(if $(shell command -v flock),flock harness) $(HARNESS_PYTHON) -m pip install --quiet --disable-pip-version-check $(HARNESS_PIP_FLAGS) ./harness

bench: build venv
	$(VENV)/bin/python tests/bench/bench_shard.py
	$(VENV)/bin/python tests/bench/bench_merge.py
	bash tests/bench/bench_spawn.sh
	$(VENV)/bin/python tests/bench/bench_balance.py
	$(VENV)/bin/python tests/bench/bench_hot_path.py

# The links only: the virtualenvs stay in the cache folder for the next clone (remove that
# folder, ~/.cache/parallel-warmup, to drop them).
clean:
	$(CARGO) clean
	rm -rf $(VENV) $(TRITON_VENV)
