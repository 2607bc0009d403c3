"""What a group of workloads does on one shared GPU: each member's throughput and the GPU's
power, from the predictions' pairwise fractions (telemetry/agent/colocation.py: the measured pair
for two, the additive-slowdown estimate for three or more).

A round asks for the same few workload combinations many times (thousands of jobs, 26
workloads), so lookups and estimates are made once per round and kept.
"""
from telemetry.agent.colocation import group_fraction

from .feasibility import margin, uncertainty
from .limit_levels import limit_levels
from .problem import Problem

Estimate = tuple[tuple[float, ...], float]  # (throughput of each member, steps/s; GPU power, W)


class GroupEstimates:
    def __init__(self, problem: Problem, workloads: list[str], types: list[str]):
        pred = problem.predictions
        self.problem = problem
        self.solo = {(w, t): pred.tau(w, t, 1, True) for w in workloads for t in types}
        self.util = {(w, t): _util(pred, w, t) for w in workloads for t in types}
        self.rho = {(w, v, t): pred.rho(w, v, t) for w in workloads for v in workloads for t in types}
        # The share of a member's throughput it may count on for its T_min: its isolated
        # prediction's margin (feasibility.margin), 1 where measured.
        z = problem.settings.unmeasured_margin_z
        self.margin = {} if z == 0 else {
            (w, t): share for w in workloads for t in types
            if (share := margin(*uncertainty(pred, w, t, 1, True), problem.settings)) < 1.0
        }
        # (workload, type) -> {limit W: (speed, power fraction)} (limit_levels.py)
        self.levels = {(w, t): {lim: (speed, power) for lim, speed, power in found}
                       for w in workloads for t in types if (found := limit_levels(problem, w, t))}
        self._known: dict[tuple[tuple[str, ...], str], Estimate | None] = {}
        self._pairs: dict[tuple[str, str, str], Estimate | None] = {}

    def pair(self, w: str, v: str, t: str) -> Estimate | None:
        """estimate((w, v), t), looked up directly: matching asks it for every job x workload x type."""
        key = (w, v, t)
        if key not in self._pairs:
            self._pairs[key] = self.estimate((w, v), t)
        return self._pairs[key]

    def sure(self, workloads: tuple[str, ...], t: str, taus: tuple[float, ...]) -> tuple[float, ...]:
        """The members' throughputs (of estimate(workloads, t)) they may count on for T_min."""
        if not self.margin:
            return taus
        return tuple(tau * self.margin.get((w, t), 1.0) for w, tau in zip(workloads, taus))

    def at_limits(self, workloads: tuple[str, ...], t: str) -> list[tuple[float, tuple[float, ...], tuple[float, ...]]]:
        """(limit W, each member's speed fraction, each member's power fraction) at each of the
        type's limits that every member's predictions know, highest first."""
        if not self.levels:
            return []
        known = [self.levels.get((w, t), {}) for w in workloads]
        limits = sorted(set.intersection(*(set(k) for k in known)), reverse=True)
        return [(lim, tuple(k[lim][0] for k in known), tuple(k[lim][1] for k in known)) for lim in limits]

    def estimate(self, workloads: tuple[str, ...], t: str) -> Estimate | None:
        """Throughputs of the workloads (in their order) sharing one GPU of type t, and the
        GPU's power at their summed utilization (clipped at 1); None when some pair is
        unknown or does not fit."""
        order = sorted(range(len(workloads)), key=workloads.__getitem__)
        key = (tuple(workloads[i] for i in order), t)
        if key not in self._known:
            self._known[key] = self._compute(*key)
        found = self._known[key]
        if found is None:
            return None
        taus = [0.0] * len(order)
        for rank, i in enumerate(order):
            taus[i] = found[0][rank]
        return tuple(taus), found[1]

    def _compute(self, workloads: tuple[str, ...], t: str) -> Estimate | None:
        taus, util = [], 0.0
        for k, w in enumerate(workloads):
            rho = group_fraction(self.rho[(w, v, t)] or 0.0 for v in workloads[:k] + workloads[k + 1:])
            if not rho or not self.solo[(w, t)]:
                return None
            taus.append(self.solo[(w, t)] * rho)
            util += self.util[(w, t)] * rho
        return tuple(taus), self.problem.gpu_types[t].power_curve(min(1.0, util))


def _util(pred, workload: str, gpu_type: str) -> float:
    u = pred.utilization(workload, gpu_type)
    return 1.0 if u is None else u
