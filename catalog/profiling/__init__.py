"""The benchmark suite: real PyTorch training steps on synthetic data, one representative per
catalog family at a few batch sizes, alone on one GPU, as co-located pairs and data-parallel
on several GPUs of one node (docs/profiling.md).

Pure Python and torch, no Django: it runs as a job on a GPU node (`python -m catalog.profiling`)
and writes the measurements CSV that `import_measurements` reads, or GOGH_MEASUREMENT lines
for the agent. Bump SUITE_VERSION whenever a case's model, shapes or timing rule change: a
measurement's reference (`gogh-suite/<version>/<case>`) then says which suite made it.
"""
SUITE_VERSION = "1"
