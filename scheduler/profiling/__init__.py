"""Profiling campaigns (docs/profiling.md, "Campaigns"): GOGH's benchmark suite
(catalog.profiling) run on a GPU type as low-priority jobs on its idle GPUs, and their
GOGH_MEASUREMENT lines turned into `profiling` measurements.

lines.py reads one line (pure); suite.py is the one place that imports the suite; services.py
writes (triggers, jobs, results, the end); selectors.py reads; planning.py makes campaign jobs
probes in a round's problem; receivers.py hears nodes report; live.py and metrics.py show it.
"""
