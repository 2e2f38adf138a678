# A Makefile that warms up, then runs the benchmark against the configs the warmup published.
# The tools and `warmup` (scripts/warmup) are on PATH, as `make install` puts them.
#
#   make -f examples/bench.mk bench      the one-step way: warmup decides, sweeps, then measures
#   make -f examples/bench.mk measure    step by step: each tool is a target of its own, and the
#                                        replay environment is a fragment that make includes
OP          ?= mm
GPUS        ?= 4
DEVICES     ?=
RECORDS     ?= $(CURDIR)/autotune_records
SCRATCH     ?= $(CURDIR)/warmup_scratch
THIS        := $(lastword $(MAKEFILE_LIST))
# The default benchmark: real Triton autotuners on a stubbed device (tests/triton_fixture, no GPU
# needed), with this clone's harness and .venv (make demo makes it), so that a re-run replays.
CLONE       := $(abspath $(dir $(THIS))..)
SHAPES      ?= $(CLONE)/examples/shapes.yaml
ifeq ($(origin BENCH),undefined)
BENCH       := $(CLONE)/.venv/bin/python -m pytest -q -p warmup_harness $(CLONE)/tests/triton_fixture/bench_ops.py
export PYTHONPATH := $(CLONE)/harness$(if $(PYTHONPATH),:$(PYTHONPATH))
endif

export FLAGGEMS_PERF_CURRENT_OP := $(OP)
devices := $(if $(DEVICES),--devices $(DEVICES))

.PHONY: bench measure measure-only clean

bench:
	mkdir -p $(RECORDS)
	FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR=$(RECORDS) warmup --gpus $(GPUS) $(devices) -- \
		$(BENCH) --shape_file $(SHAPES)

$(SCRATCH)/plan.json: $(SHAPES)
	warmup-shard --shards $(GPUS) --out $(SCRATCH) $(SHAPES)

# A failed shard (exit 1) still leaves the others' records: merge what there is. --in-scratch
# writes $(SCRATCH)/merged.json and conflicts.json, the names the scratch layout gives them.
$(SCRATCH)/merged.json: $(SCRATCH)/plan.json
	warmup-spawn --plan $(SCRATCH) $(devices) -- $(BENCH) --shape_file $(SHAPES) || test $$? -eq 1
	warmup-merge --in-scratch $(SCRATCH)

$(SCRATCH)/replay.mk: $(SCRATCH)/merged.json
	warmup-publish --record-dir $(RECORDS) --format make $(SCRATCH) > $@.tmp && mv $@.tmp $@

measure: $(SCRATCH)/replay.mk
	$(MAKE) -f $(THIS) REPLAY=$< measure-only

ifdef REPLAY
include $(REPLAY)
endif

measure-only:
	$(BENCH) --shape_file $(SHAPES)

clean:
	rm -rf $(SCRATCH) $(RECORDS)
