"""Record and replay of Triton's autotuner decisions, one module a concern:

* the hooks: tuners (on the autotuner classes), tuner_cache (the store view each tuner is handed,
  and the `Policy` base), bypass (FlagGems' ways around it, noticed);
* what a decision becomes: configs (a tuner's kernel, key and config as record text),
  fingerprints (a kernel's), records (the record files and sidecar, read), journal (the journal
  beside a record), writer (record mode's writer), fold (what its fold merges), sigterm (folding
  before SIGTERM), atomic and safe_read (files written whole, files read safely);
* the policies: policies (record and replay), once_recorder (record mode across children and runs),
  claims (by-key mode), resume (an earlier record's keys);
* racing: race (the race of a key's configs), brief (its short timings), verdict (who is re-timed),
  race_history (configs never near), race_settings (its settings);
* what the sidecar says of the process: device, clocks; and progress (a sweep child's file).

Imports nothing when imported: tuners imports Triton, and only the session imports tuners.
"""
