"""Executors: how GOGH's decisions reach the machines (docs/executors.md). Pure: no Django.

`base` is the interface both implementations keep; `agent` is GOGH's own node agent (it pulls
its assignments, so the control plane has nothing to push); `slurm` drives a Slurm cluster
through its command-line tools. scheduler.dispatch.executor_sync is the Django shell that
applies an executor's snapshot and pushes the round's decisions through it."""
