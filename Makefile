# parallel-warmup: build, demo, test, install.
#   make demo     the whole flow on the bundled example, no GPU needed
#   make test     everything CI runs: cargo tests, clippy, rustfmt, the pytest suite, shellcheck, ruff,
#                 and the harness tests on every Triton the README claims (make test-triton)
#   make install PREFIX=/usr/local   binaries, the scripts, completions, man pages, the contract
#                                    (share/doc/parallel-warmup/CONTRACT.md), and the harness
#                                    plugin into HARNESS_PYTHON's environment

PYTHON  ?= python3
CARGO   ?= cargo
PREFIX  ?= /usr/local
VENV    := .venv
RELEASE := target/release
DEBUG   := target/debug
TOOLS   := warmup-shard warmup-spawn warmup-merge warmup-publish warmup-costs warmup-plan
# The scripts: scripts/NAME, their shared scripts/lib/warmup-common.sh (installed into
# share/parallel-warmup), their man pages and completions generated from warmup-plan's clap
# definitions of their options (warmup-plan --man|--completions SHELL --for NAME).
SCRIPTS := warmup warmup-slurm
# The Python that runs your benchmarks: `make install` puts the harness plugin (harness/) into its
# environment with pip. HARNESS_PYTHON= (empty) skips that; HARNESS_PIP_FLAGS adds pip options.
HARNESS_PYTHON    ?= $(PYTHON)
HARNESS_PIP_FLAGS ?=

.PHONY: all build demo test test-rust test-python test-triton triton-venvs lint install install-harness bench clean

all: build

build:
	$(CARGO) build --release --workspace --locked

# The project-local virtualenv the tests and the demo run pytest and PyYAML from.
$(VENV)/ready: tests/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r tests/requirements.txt
	touch $@

venv: $(VENV)/ready

# The demo: 12 shapes of op mm swept on four pretend devices by the fixture harness, then the
# measurement replaying the merged configs. No GPU needed; the sweep cost is simulated. The
# fixture records and replays by itself, without warmup_harness: -p no:warmup_harness says so, and
# the measurement runs after the sweep instead of waiting at the harness's gate alongside it.
demo: build $(VENV)/ready
	@rm -rf target/demo && mkdir -p target/demo/records
	FLAGGEMS_PERF_CURRENT_OP=mm \
	FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=$(CURDIR)/target/demo/records \
	WARMUP_FIXTURE_SWEEP_SECONDS=0.2 WARMUP_FIXTURE_SWEEP_COST=numel \
	WARMUP_BIN_DIR=$(CURDIR)/$(RELEASE) \
	scripts/warmup --gpus 4 --devices 0,1,2,3 --backend cuda -- \
		$(VENV)/bin/python -m pytest -q -p no:warmup_harness tests/harness/test_bench.py \
		--shape_file examples/shapes.yaml
	@echo "merged configs: target/demo/records/mm.json"

test: test-rust test-python test-triton lint

test-rust:
	$(CARGO) test --workspace --locked

test-python: $(VENV)/ready
	$(CARGO) build --workspace --locked
	WARMUP_BIN_DIR=$(CURDIR)/$(DEBUG) $(VENV)/bin/python -m pytest -q

# The harness on every Triton it claims (README.md, "The harness"; harness/warmup_harness/versions.py
# holds the range): the latest patch of each minor, one venv each under .venv-triton/ with only
# tests/requirements-triton.txt and that Triton, made side by side (pip's cache is shared), then
# the harness tests in each, one version after the other, every version run even when one fails,
# and the failed ones named at the end. TRITONS=3.9.0 runs one.
TRITONS       ?= 3.4.0 3.5.1 3.6.0 3.7.1 3.8.0 3.9.0
TRITON_VENV   := .venv-triton
HARNESS_TESTS := tests/test_harness.py tests/test_harness_hooks.py tests/test_harness_versions.py \
                 tests/test_precompile.py

$(TRITON_VENV)/%/ready: tests/requirements-triton.txt
	rm -rf $(TRITON_VENV)/$*
	$(PYTHON) -m venv $(TRITON_VENV)/$*
	$(TRITON_VENV)/$*/bin/python -m pip install --quiet --disable-pip-version-check \
		-r tests/requirements-triton.txt triton==$*
	touch $@

triton-venvs:
	$(MAKE) -j$(words $(TRITONS)) $(TRITONS:%=$(TRITON_VENV)/%/ready)

test-triton: triton-venvs
	$(CARGO) build --workspace --locked
	@failed=; for v in $(TRITONS); do \
		echo "test-triton: Triton $$v"; \
		WARMUP_BIN_DIR=$(CURDIR)/$(DEBUG) $(TRITON_VENV)/$$v/bin/python -m pytest -q $(HARNESS_TESTS) \
			|| failed="$$failed $$v"; \
	done; \
	if [ -n "$$failed" ]; then echo "test-triton: the harness tests failed on Triton$$failed (above)" >&2; exit 1; fi

lint: $(VENV)/ready
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings
	$(CARGO) fmt --all --check
	$(VENV)/bin/shellcheck scripts/warmup scripts/warmup-slurm scripts/lib/*.sh .ci/run tests/gpu/*.sh
	$(VENV)/bin/ruff check harness tests

# RELEASE=target/debug installs a debug build without building a release one (the tests do).
install: $(if $(filter target/release,$(RELEASE)),build) $(if $(HARNESS_PYTHON),install-harness)
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
		"$(RELEASE)/warmup-plan" --man --for "$$s" > "$$dest/share/man/man1/$$s.1"; \
		"$(RELEASE)/warmup-plan" --completions bash --for "$$s" > "$$dest/share/bash-completion/completions/$$s"; \
		"$(RELEASE)/warmup-plan" --completions zsh --for "$$s" > "$$dest/share/zsh/site-functions/_$$s"; \
		"$(RELEASE)/warmup-plan" --completions fish --for "$$s" > "$$dest/share/fish/vendor_completions.d/$$s.fish"; \
	done; \
	echo "installed into $$dest"

install-harness:
	$(HARNESS_PYTHON) -m pip install --quiet --disable-pip-version-check $(HARNESS_PIP_FLAGS) ./harness

bench: build $(VENV)/ready
	$(VENV)/bin/python tests/bench/bench_shard.py
	$(VENV)/bin/python tests/bench/bench_merge.py
	bash tests/bench/bench_spawn.sh
	$(VENV)/bin/python tests/bench/bench_balance.py

clean:
	$(CARGO) clean
	rm -rf $(VENV) $(TRITON_VENV)
