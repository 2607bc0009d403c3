"""The activity log: one line for each fact a person following the cluster cares about (a job
submitted, placed, started, moved, preempted or finished; a node registered, up, down or
drained; a round that changed something), on the logger `gogh.activity` at INFO.

Each line is written by the service that decides the fact, once its transaction commits, so a
change that is rolled back logs nothing and a line never announces what the database does not
hold. `run_stack` shows these lines and hides Celery's task chatter unless --verbose
(docs/configuration.md, "Logs").
"""
import logging

from django.db import transaction

log = logging.getLogger("gogh.activity")


def announce(message: str, *args) -> None:
    """Log `message % args` on gogh.activity when the current transaction commits (at once
    outside one)."""
    transaction.on_commit(lambda: log.info(message, *args))


def gpus_where(gpus) -> str:
    """Where GPUs are, for a person: "demo-v100-01 GPU 0,1 (v100)", nodes in name order,
    joined with "; " when a job spans several. `gpus`: Gpu rows with node and gpu_type loaded."""
    by_node: dict[str, list] = {}
    for gpu in gpus:
        by_node.setdefault(gpu.node.hostname, []).append(gpu)
    parts = []
    for hostname, on_node in sorted(by_node.items()):
        indexes = ",".join(str(gpu.index) for gpu in sorted(on_node, key=lambda gpu: gpu.index))
        types = "/".join(sorted({gpu.gpu_type.name for gpu in on_node}))
        parts.append(f"{hostname} GPU {indexes} ({types})")
    return "; ".join(parts)
