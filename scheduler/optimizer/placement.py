"""From the aggregated decision to concrete GPUs.

Jobs that keep their current configuration stay on their GPUs, and so do the jobs of a shared
GPU whose partners change (one leaves, or one joins) where their GPU is still free (a service
replica's first, then a pinned job's); consolidated multi-GPU jobs go next, largest first,
each onto the node of its type with the fewest free GPUs that still hold it (best fit, so
whole nodes stay whole for the next large job); single GPUs, groups and spread-out jobs fill what is left,
each kind by priority level, then job id. With
topology-aware isolation a PCIe switch serves one tenant only, and a tenant's jobs take GPUs on
its own switches before they open another (so switches are not split among tenants
needlessly). Boards flagged slow are taken last, and only by jobs whose T_min holds at their
own speed (board_speeds.serves). A board at risk takes no job that is not on it already
(at_risk.py): the jobs on it stay until they leave, and no unit is packed onto it. A job leaving
it (JobSpec.leaving) is not kept on its GPUs: its unit is packed on other boards, then (with retry)
its other configurations are tried, and only where none found room does it stay where it is. An
admitted consolidated multi-GPU job that found no node, and no other configuration with room,
gets a node freed for it: one-GPU jobs move from it to free GPUs of their type on other nodes
(defragment.py). With isolation, a job left without GPUs above a job of a lower priority that got
some has the decision placed again level by level, which stands where it places more per level.
A job that cannot be placed stays pending with the reason; where that is a
running job the decision admits, the solver places the decision again with running jobs left
where they run (status_quo.py).
"""
from collections import defaultdict

from .at_risk import takes_new_work
from .board_speeds import serves, type_speeds
from .choices import Choice
from .defragment import free_node_for, movable_jobs
from .feasibility import SWITCH_TAKEN, switch_allows
from .instance import Instance
from .problem import Placement

UNPLACEABLE = "Could not be placed onto concrete GPUs ({why}); it stays pending until capacity frees up."
FREED_NODE = "{n} one-GPU unit(s) moved to other GPUs of their type to free a node for a multi-GPU job."


def place(
    inst: Instance, choices: list[Choice], *, retry: bool = True
) -> tuple[dict[str, Placement], dict[int, str], list[Choice], int]:
    """(placements, job index -> why it could not be placed, the choices as placed, one-GPU
    units moved to free a node). With `retry`, a job that cannot get GPUs for its chosen
    configuration tries its others that meet T_min, cheapest first, on the GPUs left (the
    aggregated model sees neither running jobs' exact GPUs nor PCIe switches), and then a
    consolidated one gets a node freed for it. With isolation, where a job of a higher priority
    level is left without GPUs while a lower level's job got some, the decision is placed a
    second time level by level (each level packed and its failures retried before the next
    packs: the lower level may have taken the switches the other configurations needed), and
    that placement stands where it places more jobs per level, highest first."""
    first = _place(inst, choices, retry=retry, level_major=False)
    if not (retry and inst.problem.settings.topology_isolation and _inverted(inst, first[0], first[1])):
        return first
    second = _place(inst, choices, retry=True, level_major=True)
    return second if _placed_by_level(inst, second[0]) > _placed_by_level(inst, first[0]) else first


def _inverted(inst: Instance, placements: dict[str, Placement], failed: dict[int, str]) -> bool:
    """A job left without GPUs at a priority level above a job that got some."""
    placed = [job.priority for job in inst.jobs if job.id in placements]
    return bool(failed) and bool(placed) and max(inst.jobs[j].priority for j in failed) > min(placed)


def _placed_by_level(inst: Instance, placements: dict[str, Placement]) -> list[int]:
    levels = sorted({job.priority for job in inst.jobs}, reverse=True)
    return [sum(1 for job in inst.jobs if job.priority == level and job.id in placements) for level in levels]


def _place(
    inst: Instance, choices: list[Choice], *, retry: bool, level_major: bool
) -> tuple[dict[str, Placement], dict[int, str], list[Choice], int]:
    """place()'s steps; `level_major`: units packed one priority level at a time, each level's
    failures retried before the next level packs."""
    packer = _Packer(inst, choices)
    rest = [unit for unit in _units(inst, packer.choices) if not packer.keep(unit)]  # 1. current GPUs
    rest.sort(key=lambda u: (not any(inst.jobs[j].service for j in u["jobs"]),
                             not any(inst.jobs[j].pinned for j in u["jobs"]), inst.jobs[u["jobs"][0]].id))
    rest = [unit for unit in rest if not packer.stay(unit)]  # 1b. a shared GPU's jobs that stay on it
    # 2. consolidated blocks, largest first, best fit; 3. single GPUs, pairs, spread-out jobs; each
    # by priority level (a higher level's unit claims GPUs and switches before a lower's), then id
    rest.sort(key=lambda u: (not (u["consolidated"] and u["k"] > 1), -u["k"], -_level(inst, u),
                             inst.jobs[u["jobs"][0]].id))
    # 4. with retry, jobs that got no GPUs try their other configurations, by priority (level by
    # level: each level's after its own units)
    order = inst.admission_order()
    for batch in _by_level(inst, rest) if level_major else [rest]:
        for unit in batch:
            packer.pack(unit)
        in_batch = {j for unit in batch for j in unit["jobs"]}
        for j in [j for j in order if j in packer.failed and j in in_batch] if retry else ():
            packer.retry(j)
    # 5. with retry, consolidated jobs still without GPUs get a node freed, by priority
    moved = 0
    if retry and packer.failed:
        movable, borrowers = movable_jobs(inst)
        for j in [j for j in order if j in packer.failed]:
            moved += free_node_for(packer, j, movable, borrowers)
    # 6. a job leaving a board at risk that found room nowhere else stays where it is
    for unit in _units(inst, packer.choices):
        if any(inst.jobs[j].leaving for j in unit["jobs"]) and all(j in packer.failed for j in unit["jobs"]):
            packer.keep(unit, last_resort=True)
    return packer.placements, packer.failed, packer.choices, moved


class _Packer:
    """The free GPUs (type -> node -> GPUs), the PCIe switches' tenants, and what was placed."""

    def __init__(self, inst: Instance, choices: list[Choice]):
        self.inst = inst
        self.choices = list(choices)
        self.isolate = inst.problem.settings.topology_isolation
        self.free: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
        for gpu in sorted(inst.problem.gpus, key=lambda g: g.slow):  # flagged boards last on each node
            self.free[gpu.gpu_type][gpu.node].append(gpu)
        self.type_speed = type_speeds(inst.problem.gpus)
        # types with no board at risk and none flagged slow: every free board of them fits any unit
        self.plain = {g.gpu_type for g in inst.problem.gpus} - {
            g.gpu_type for g in inst.problem.gpus if g.slow or not takes_new_work(g)}
        self.gpu_by_id = {g.id: g for g in inst.problem.gpus}
        self.switch_tenant: dict[tuple[str, str], str] = {}
        self.tenant_nodes: dict[str, set] = defaultdict(set)  # nodes where a tenant owns a switch
        self.placements: dict[str, Placement] = {}
        self.failed: dict[int, str] = {}

    def allowed(self, gpu, tenant: str) -> bool:
        if self.isolate and gpu.pcie_switch:
            return switch_allows(self.switch_tenant.get((gpu.node, gpu.pcie_switch)), tenant)
        return True

    def own(self, gpu, tenant: str) -> bool:
        return bool(gpu.pcie_switch) and self.switch_tenant.get((gpu.node, gpu.pcie_switch)) == tenant

    def usable(self, gpus, tenant: str) -> list:
        """The GPUs of one node the tenant may take, with isolation those on its own switches
        first (so tenants fill their switches before they open new ones)."""
        if not self.isolate:
            return list(gpus)
        owned = [g for g in gpus if self.own(g, tenant)]
        return owned + [g for g in gpus if self.allowed(g, tenant) and not self.own(g, tenant)]

    def pick(self, nodes, tenant: str, k: int, fits) -> list:
        """k GPUs of any nodes (single GPUs, pairs, spread jobs) that `fits` allows; with
        isolation the free GPUs on the tenant's own switches first, boards flagged slow last.
        [] when there are not k."""
        gpus, taken = [], set()
        for node in sorted(self.tenant_nodes[tenant]) if self.isolate else ():
            for g in nodes.get(node, ()):
                if self.own(g, tenant) and fits(g) and len(gpus) < k:
                    gpus.append(g)
                    taken.add(g.id)
        for slow in (False, True):
            for gs in nodes.values():
                if len(gpus) == k:
                    break
                gpus += [g for g in gs if g.slow == slow and g.id not in taken and self.allowed(g, tenant) and fits(g)][
                    : k - len(gpus)
                ]
        return gpus if len(gpus) == k else []

    def fits(self, gpu_type: str, planned: list[tuple[float, float]]):
        """Which boards of the type may take a unit whose jobs were planned at (throughput, T_min):
        none at risk (it takes no new work), a flagged one only where their T_min holds there."""
        if gpu_type in self.plain:
            return _any_board
        speed = self.type_speed.get(gpu_type, 1.0)
        return lambda gpu: takes_new_work(gpu) and serves(gpu, planned, speed)

    def find(self, gpu_type: str, k: int, consolidated: bool, tenant: str, planned) -> tuple[list, str]:
        """GPUs for one unit ([] if none) and why not; `planned`: its jobs' (throughput, T_min),
        which decide whether a board flagged slow may take it."""
        nodes, fits = self.free[gpu_type], self.fits(gpu_type, planned)
        if consolidated and k > 1:
            fitting = []
            for node, gs in nodes.items():
                if len(gs) >= k:
                    ok = self.usable(gs, tenant)
                    if fits is not _any_board:
                        ok = [g for g in ok if fits(g)]
                    if len(ok) >= k:
                        fitting.append((len(ok), node, ok))
            gpus = min(fitting, key=lambda f: f[:2])[2][:k] if fitting else []
            why = f"no node of type {gpu_type} has {k} free GPUs left"
        else:
            gpus = self.pick(nodes, tenant, k, fits)
            why = f"not enough free {gpu_type} GPUs left"
        return gpus, why + (SWITCH_TAKEN if self.isolate else "")

    def claim(self, gpus, tenant: str) -> None:
        for gpu in gpus:
            node_free = self.free[gpu.gpu_type][gpu.node]
            node_free.remove(gpu)
            if not node_free:
                del self.free[gpu.gpu_type][gpu.node]
            if gpu.pcie_switch:
                self.switch_tenant[(gpu.node, gpu.pcie_switch)] = tenant
                self.tenant_nodes[tenant].add(gpu.node)

    def release(self, gpus) -> None:
        """GPUs claimed this round are free again (without topology isolation only)."""
        for gpu in gpus:
            self.free[gpu.gpu_type][gpu.node].append(gpu)

    def tau(self, j: int) -> float:
        """The throughput job j was planned at in its current choice."""
        choice = self.choices[j]
        return self.inst.groups[choice[1]].tau_of(j) if choice[0] == "g" else self.inst.all_options[choice[1]].tau

    def record(self, j: int, gpus) -> None:
        inst, choice, job = self.inst, self.choices[j], self.inst.jobs[j]
        if choice[0] == "g":
            group = inst.groups[choice[1]]
            tau, consolidated, power = group.tau_of(j), True, group.power_w / len(group.members)
            partners = tuple(inst.jobs[x].id for x in group.partners_of(j))
            limit = group.power_limit_w
        else:
            opt = inst.all_options[choice[1]]
            tau, partners, consolidated, power, limit = opt.tau, (), opt.consolidated, opt.power_w, opt.power_limit_w
        self.placements[job.id] = Placement(
            job.id, gpus[0].gpu_type, tuple(g.id for g in gpus), consolidated, partners, tau, power, limit
        )

    def keep(self, unit: dict, last_resort: bool = False) -> bool:
        """A unit that keeps its configuration stays on its GPUs, where they are still free, unless
        one of its jobs leaves the board at risk it runs on (keep_work.py): then it is packed anew
        on other boards, and stays only as the `last_resort`, where it found room nowhere else."""
        job = self.inst.jobs[unit["jobs"][0]]
        if not unit["current"] or (not last_resort and any(self.inst.jobs[j].leaving for j in unit["jobs"])):
            return False
        gpus = [self.gpu_by_id[g] for g in job.current.gpu_ids]
        if not all(g in self.free[g.gpu_type].get(g.node, ()) and self.allowed(g, job.tenant) for g in gpus):
            return False
        self.claim(gpus, job.tenant)
        for j in unit["jobs"]:
            self.record(j, gpus)
            self.failed.pop(j, None)
        return True

    def stay(self, unit: dict) -> bool:
        """A one-GPU unit that changed configuration (a job leaving or joining a shared GPU) takes
        the GPU one of its jobs holds now, where that is of its type and still free: the job
        keeps running there (only its partners change), where any free GPU would restart it.
        Service replicas' units go first (a training partner moves away, not the replica:
        docs/services.md), then pinned jobs'. A board at risk keeps only a unit all of whose jobs
        are on it already (it takes no new job)."""
        if unit["k"] != 1 or any(self.inst.jobs[j].leaving for j in unit["jobs"]):
            return False
        for j in unit["jobs"]:
            current = self.inst.jobs[j].current
            gpu = self.gpu_by_id.get(current.gpu_ids[0]) if current and len(current.gpu_ids) == 1 else None
            tenant = self.inst.jobs[j].tenant
            if gpu and gpu.gpu_type == unit["type"] and gpu in self.free[gpu.gpu_type].get(gpu.node, ()) and (
                self.allowed(gpu, tenant)
            ) and (takes_new_work(gpu) or all(self._on(x, gpu) for x in unit["jobs"])):
                self.claim([gpu], tenant)
                for x in unit["jobs"]:
                    self.record(x, [gpu])
                return True
        return False

    def _on(self, j: int, gpu) -> bool:
        """Job j runs on the GPU now."""
        current = self.inst.jobs[j].current
        return current is not None and gpu.id in current.gpu_ids

    def pack(self, unit: dict) -> None:
        tenant = self.inst.jobs[unit["jobs"][0]].tenant
        planned = [(self.tau(j), self.inst.jobs[j].min_throughput) for j in unit["jobs"]]
        gpus, why = self.find(unit["type"], unit["k"], unit["consolidated"], tenant, planned)
        if not gpus:
            for j in unit["jobs"]:
                self.failed[j] = UNPLACEABLE.format(why=why)
            return
        self.claim(gpus, tenant)
        for j in unit["jobs"]:
            self.record(j, gpus)

    def retry(self, j: int) -> None:
        """Job j, which got no GPUs, takes its cheapest other option meeting T_min that finds some."""
        inst, tenant = self.inst, self.inst.jobs[j].tenant
        for i in sorted(inst.job_options[j], key=lambda i: (inst.all_options[i].cost, i)):
            opt = inst.all_options[i]
            planned = [(opt.tau, inst.jobs[j].min_throughput)]
            gpus, _ = self.find(opt.gpu_type, opt.num_gpus, opt.consolidated, tenant, planned)
            if gpus:
                self.choices[j] = ("o", i)
                self.claim(gpus, tenant)
                self.record(j, gpus)
                del self.failed[j]
                break


def _level(inst: Instance, unit: dict) -> int:
    return max(inst.jobs[j].priority for j in unit["jobs"])


def _by_level(inst: Instance, units: list[dict]) -> list[list[dict]]:
    """The units in batches of one priority level, the highest first, each in packing order."""
    levels = sorted({_level(inst, u) for u in units}, reverse=True)
    return [[u for u in units if _level(inst, u) == level] for level in levels]


def _any_board(gpu) -> bool:
    """`fits` of a type whose boards are all healthy and none flagged slow (the usual case: a
    large cluster's placement then skips testing every free GPU of every node per unit)."""
    return True


def _units(inst: Instance, choices: list[Choice]) -> list[dict]:
    """What needs GPUs: one unit per option, one per group (holding all its jobs)."""
    units, seen_groups = [], set()
    for j, choice in enumerate(choices):
        if choice is None:
            continue
        if choice[0] == "g":
            if choice[1] in seen_groups:
                continue
            seen_groups.add(choice[1])
            group = inst.groups[choice[1]]
            units.append(
                {"jobs": list(group.members), "type": group.gpu_type, "k": 1, "consolidated": True,
                 "current": group.current}
            )
        else:
            opt = inst.all_options[choice[1]]
            units.append(
                {"jobs": [j], "type": opt.gpu_type, "k": opt.num_gpus, "consolidated": opt.consolidated,
                 "current": opt.current}
            )
    return units
