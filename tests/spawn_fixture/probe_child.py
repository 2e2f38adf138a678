"""Run only as warmup-spawn's child (by test_spawn.py; the name keeps it out of collection):
records what the child got -- its argv, its environment and the shard its --shape_file loads --
as JSON in its record folder, for the outer test to check against the contract."""

import json
import os

import yaml


def test_record_what_the_child_got(request):
    shape_file = request.config.getoption("--shape_file")
    with open(shape_file) as f:
        shard = yaml.safe_load(f)
    with open("/proc/self/cmdline", "rb") as f:
        argv = [a.decode() for a in f.read().split(b"\0")[:-1]]
    record = {"argv": argv, "env": dict(os.environ), "shard": shard, "cwd": os.getcwd()}
    out = os.path.join(os.environ["FLAGGEMS_PERF_AUTOTUNE_RECORD_DIR"], "probe.json")
    with open(out, "w") as f:
        json.dump(record, f)
