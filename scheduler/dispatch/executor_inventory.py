"""Phases 2 and 3 of the executor sync: the executor's inventory and the runs GOGH did not
submit, as plain data for telemetry's inventory service (nodes up or down, their GPUs, GPUs
held by others' runs, which the rounds then plan around)."""
from catalog.models import GpuType
from telemetry.services.executor_inventory import executor_inventory_apply

from ..executors.base import RUNNING, Snapshot


def inventory_apply(snapshot: Snapshot, *, manager: str, gres_types: dict[str, str], known: set[str], now,
                    stats: dict) -> list[str]:
    """Hand the snapshot's nodes and foreign runs to telemetry; what was left out and why (a
    gres type that maps to no GPU type of the catalog: those GPUs are not GOGH's to plan on)."""
    catalog = set(GpuType.objects.values_list("name", flat=True))
    nodes, left_out = [], []
    for node in snapshot.nodes:
        gpus: dict[str, int] = {}
        for gres, count in sorted(node.gpus.items()):
            name = gres_types.get(gres, gres)
            if name in catalog:
                gpus[name] = gpus.get(name, 0) + count
            else:
                left_out.append(f"node {node.name}: gres type {gres!r} maps to no GPU type ({name!r}); "
                                f"its {count} GPU(s) left out")
        nodes.append({"name": node.name, "up": node.up, "reason": node.reason, "gpus": gpus})
    holders = foreign_holders(snapshot, known)
    executor_inventory_apply(manager=manager, nodes=nodes, holders=holders, now=now)
    stats.update(nodes=len(nodes), foreign_gpus=len(holders))
    if left_out:
        stats["left_out"] = left_out
    return left_out


def foreign_holders(snapshot: Snapshot, known: set[str]) -> dict[tuple[str, int], str]:
    """{(node, GPU index): who holds it} for running runs GOGH did not submit or no longer
    tracks (`known`: the external ids of its unsettled runs), e.g. a user's own sbatch."""
    holders = {}
    for run in snapshot.runs:
        if run.state != RUNNING or not run.node or run.external_id in known:
            continue
        who = f"Slurm job {run.external_id}" + (f" of {run.user}" if run.user else "")
        for index in run.gpu_indexes:
            holders[(run.node, index)] = who
    return holders
