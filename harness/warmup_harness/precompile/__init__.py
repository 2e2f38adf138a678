"""Compiling a new key's configs ahead, before the tuner times them, and timing one config at a
time per device: precompiler (what the autotuner hooks call), settings, capture, cache_entries,
pool, worker_processes (its processes, from the session's side), worker (a compile worker
process's side) and device_lock; precompiler.py says why and how.

Imports nothing when imported: a compile worker process imports this package, worker.py and what
it needs, and never pytest or the plugin (the package's own `__init__` imports the standard
library only).
"""
