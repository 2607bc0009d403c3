"""Gavel's heterogeneity-aware policies (Narayanan et al., OSDI 2020), implemented by the
project from the paper as the peers `simulate` measures GOGH against (docs/simulation.md).

Section 4: an allocation X gives each job j a fraction of time X[j][g] on each GPU type g
(each job's fractions sum to at most 1; per type, sum_j X[j][g] * D_j <= GPUs of g), and its
effective throughput is throughput(j, X) = sum_g X[j][g] * T[j][g], T[j][g] the job's steps/s
on its D_j GPUs of type g. The policies (gavel_max_min.py, gavel_ftf.py) choose X by an LP;
this module holds what they share: the jobs' facts, the equal-share allocation X_equal they
normalise by, the LP's allocation variables, and section 5's round-based mechanism that turns
X into whole-GPU placements round after round. Space sharing (two jobs on one GPU, Gavel's
optional extension) is left out: every job runs alone on its D_j GPUs.

The policies ignore energy and T_min, as Gavel's do. Pure Python (PuLP on HiGHS), no Django.
They are not in the solver catalogue (registry.py): they decide from state kept across rounds
(the time each job received on each type), which a single round's Problem does not carry.
"""
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulp

Allocation = dict[str, dict[str, float]]  # job id -> GPU type -> fraction of time


@dataclass(frozen=True)
class GavelJob:
    id: str
    gpus: Mapping[str, int]  # GPU type -> the GPUs it runs on there, every round (Gavel's scale factor)
    throughput: Mapping[str, float]  # GPU type -> steps/s of the job on those GPUs (0: cannot run)
    weight: float = 1.0  # max-min: its normalised throughput is divided by this (Gavel's w_j)
    remaining_steps: float = 0.0  # finish-time fairness: steps still to do
    total_steps: float = 0.0  # finish-time fairness: all its steps
    elapsed_s: float = 0.0  # finish-time fairness: time in the system so far


def runnable(jobs: Sequence[GavelJob]) -> list[GavelJob]:
    """The jobs some GPU type can run; the others get nothing (and are left out of the LPs)."""
    return [job for job in jobs if any(t > 0 for t in job.throughput.values())]


def equal_share(job: GavelJob, capacity: Mapping[str, int], n: float) -> dict[str, float]:
    """X_equal's row of a job among `n` jobs: 1/n of every type's GPUs, as time fractions of
    its GPUs there (c_g / (n D_jg)), scaled down when they sum above 1 (it cannot run longer
    than the whole time); a type it cannot run on gives it nothing."""
    row = {g: c / (max(n, 1.0) * job.gpus[g]) for g, c in capacity.items() if job.throughput.get(g, 0.0) > 0}
    total = sum(row.values())
    return {g: x / total for g, x in row.items()} if total > 1 else row


def effective_throughput(job: GavelJob, row: Mapping[str, float]) -> float:
    return sum(x * job.throughput.get(g, 0.0) for g, x in row.items())


def equal_share_throughput(job: GavelJob, capacity: Mapping[str, int], n: float) -> float:
    """throughput(j, X_equal): what the job gets with 1/n of the cluster."""
    return effective_throughput(job, equal_share(job, capacity, n))


def allocation_model(name: str, jobs: Sequence[GavelJob], capacity: Mapping[str, int]):
    """The LP's X (a variable per job and type it can run on) under the two constraints of
    section 4: a job's fractions sum to at most 1, a type's GPU-time to at most its GPUs."""
    lp = pulp.LpProblem(name, pulp.LpMaximize)
    x = {
        (job.id, g): pulp.LpVariable(f"x_{i}_{k}", 0, 1)
        for i, job in enumerate(jobs) for k, g in enumerate(sorted(capacity)) if job.throughput.get(g, 0.0) > 0
    }
    for i, job in enumerate(jobs):
        row = [v for (j, _), v in x.items() if j == job.id]
        if row:
            lp += pulp.lpSum(row) <= 1, f"time_{i}"
    for k, g in enumerate(sorted(capacity)):
        used = [v * job.gpus[g] for job in jobs for (j, t), v in x.items() if j == job.id and t == g]
        if used:
            lp += pulp.lpSum(used) <= capacity[g], f"gpus_{k}"
    return lp, x


def throughput_expr(job: GavelJob, x) -> pulp.LpAffineExpression:
    return pulp.lpSum(v * job.throughput[g] for (j, g), v in x.items() if j == job.id)


def solve_lp(lp: pulp.LpProblem) -> bool:
    """True when HiGHS found the optimum."""
    lp.solve(pulp.HiGHS(msg=False, threads=1))
    return lp.status == pulp.LpStatusOptimal


def read_allocation(x) -> Allocation:
    out: Allocation = defaultdict(dict)
    for (j, g), v in x.items():
        value = v.value() or 0.0
        if value > 1e-9:
            out[j][g] = min(1.0, value)
    return dict(out)


class RoundMechanism:
    """Section 5: each round, (job, type) pairs are served in order of priority
    X[j][g] / (fraction of the job's rounds spent on g so far), a pair never served first
    (infinite priority, by X); a job takes its whole GPUs of one type when that many are free,
    at most one type per round. Over rounds each job's time on each type converges to X.
    The state (rounds each job was present and got on each type) lives here, across rounds."""

    def __init__(self):
        self.present: dict[str, int] = defaultdict(int)
        self.received: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))

    def priority(self, job_id: str, gpu_type: str, share: float) -> tuple[float, float]:
        """(priority, X) to sort by, largest first."""
        got = self.received[job_id][gpu_type]
        if got == 0:
            return (float("inf"), share)
        return (share / (got / self.present[job_id]), share)

    def assign(self, allocation: Allocation, gpus: Mapping[str, Mapping[str, int]],
               free: Mapping[str, int]) -> dict[str, str]:
        """job id -> the GPU type it runs on this round (jobs left out wait); `gpus` holds each
        job's GPUs per type, `free` the GPUs of each type this round. Records the round."""
        pairs = [(j, g, x) for j, row in allocation.items() for g, x in row.items() if x > 0 and j in gpus]
        pairs.sort(key=lambda p: (*(-v for v in self.priority(p[0], p[1], p[2])), p[0], p[1]))
        left, chosen = dict(free), {}
        for j, g, _ in pairs:
            if j not in chosen and left.get(g, 0) >= gpus[j][g]:
                chosen[j] = g
                left[g] -= gpus[j][g]
        for j in gpus:
            self.present[j] += 1
        for j, g in chosen.items():
            self.received[j][g] += 1
        return chosen

    def forget(self, job_id: str) -> None:
        self.present.pop(job_id, None)
        self.received.pop(job_id, None)
