"""From the aggregated decision to concrete GPUs.

Jobs that keep their current configuration stay on their GPUs; consolidated multi-GPU jobs
go next, largest first, each onto the node of its type with the fewest free GPUs that still
hold it (best fit, so whole nodes stay whole for the next large job); single GPUs, pairs and
spread-out jobs fill what is left. With topology-aware isolation a PCIe switch serves one
tenant only. A job that cannot be placed stays pending with the reason.
"""
from collections import defaultdict

from .choices import Choice
from .instance import Instance
from .problem import Placement

UNPLACEABLE = "Could not be placed onto concrete GPUs ({why}); it stays pending until capacity frees up."


def place(inst: Instance, choices: list[Choice]) -> tuple[dict[str, Placement], dict[int, str]]:
    problem = inst.problem
    isolate = problem.settings.topology_isolation
    free: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))  # type -> node -> free GPUs
    for gpu in problem.gpus:
        free[gpu.gpu_type][gpu.node].append(gpu)
    switch_tenant: dict[tuple[str, str], str] = {}
    placements: dict[str, Placement] = {}
    failed: dict[int, str] = {}

    def allowed(gpu, tenant: str) -> bool:
        if isolate and gpu.pcie_switch:
            return switch_tenant.get((gpu.node, gpu.pcie_switch), tenant) == tenant
        return True

    def claim(gpus, tenant: str) -> None:
        for gpu in gpus:
            node_free = free[gpu.gpu_type][gpu.node]
            node_free.remove(gpu)
            if not node_free:
                del free[gpu.gpu_type][gpu.node]
            if gpu.pcie_switch:
                switch_tenant[(gpu.node, gpu.pcie_switch)] = tenant

    def record(j: int, gpus) -> None:
        choice = choices[j]
        job = inst.jobs[j]
        if choice[0] == "p":
            pair = inst.pairs[choice[1]]
            tau = pair.tau_a if j == pair.a else pair.tau_b
            partner, consolidated, power = inst.jobs[pair.partner_of(j)].id, True, pair.power_w / 2
        else:
            opt = inst.all_options[choice[1]]
            tau, partner, consolidated, power = opt.tau, None, opt.consolidated, opt.power_w
        placements[job.id] = Placement(job.id, gpus[0].gpu_type, tuple(g.id for g in gpus), consolidated, partner, tau, power)

    units = _units(inst, choices)
    gpu_by_id = {g.id: g for g in problem.gpus}
    rest = []
    for unit in units:  # 1. jobs that keep their configuration stay on their GPUs
        job = inst.jobs[unit["jobs"][0]]
        if unit["current"]:
            gpus = [gpu_by_id[g] for g in job.current.gpu_ids]
            if all(g in free[g.gpu_type].get(g.node, ()) and allowed(g, job.tenant) for g in gpus):
                claim(gpus, job.tenant)
                for j in unit["jobs"]:
                    record(j, gpus)
                continue
        rest.append(unit)
    # 2. consolidated blocks, largest first, best fit; 3. single GPUs, pairs, spread-out jobs
    rest.sort(key=lambda u: (not (u["consolidated"] and u["k"] > 1), -u["k"], inst.jobs[u["jobs"][0]].id))
    for unit in rest:
        tenant = inst.jobs[unit["jobs"][0]].tenant
        nodes = free[unit["type"]]
        if unit["consolidated"] and unit["k"] > 1:
            fitting = []
            for node, gs in nodes.items():
                if len(gs) >= unit["k"]:
                    usable = [g for g in gs if allowed(g, tenant)] if isolate else gs
                    if len(usable) >= unit["k"]:
                        fitting.append((len(usable), node, usable))
            gpus = min(fitting, key=lambda f: f[:2])[2][: unit["k"]] if fitting else []
            why = f"no node of type {unit['type']} has {unit['k']} free GPUs left"
        else:
            gpus = []
            for gs in nodes.values():
                gpus += [g for g in gs if allowed(g, tenant)][: unit["k"] - len(gpus)]
                if len(gpus) == unit["k"]:
                    break
            if len(gpus) < unit["k"]:
                gpus = []
            why = f"not enough free {unit['type']} GPUs left"
        if not gpus:
            if isolate:
                why += " on PCIe switches free of other tenants"
            for j in unit["jobs"]:
                failed[j] = UNPLACEABLE.format(why=why)
            continue
        claim(gpus, tenant)
        for j in unit["jobs"]:
            record(j, gpus)
    return placements, failed


def _units(inst: Instance, choices: list[Choice]) -> list[dict]:
    """What needs GPUs: one unit per option, one per pair (holding both jobs)."""
    units, seen_pairs = [], set()
    for j, choice in enumerate(choices):
        if choice is None:
            continue
        if choice[0] == "p":
            if choice[1] in seen_pairs:
                continue
            seen_pairs.add(choice[1])
            pair = inst.pairs[choice[1]]
            units.append({"jobs": [pair.a, pair.b], "type": pair.gpu_type, "k": 1, "consolidated": True, "current": pair.current})
        else:
            opt = inst.all_options[choice[1]]
            units.append(
                {"jobs": [j], "type": opt.gpu_type, "k": opt.num_gpus, "consolidated": opt.consolidated, "current": opt.current}
            )
    return units
