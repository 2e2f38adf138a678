"""Record and replay of Triton's autotuner decisions: the hooks on the autotuners (tuners), the
store view they hand each tuner (tuner_cache), what a tuner's kernel, key and config become in a
record (configs), the record files (records, written whole by atomic) and record mode's writer
(writer), the record and replay policies (policies) and record mode's policy for keys shared
across children and runs (once_recorder: by-key claims and resume), and what the sidecar says of
the process (device, clocks).

Imports nothing when imported: tuners imports Triton, and only the session imports tuners.
"""
