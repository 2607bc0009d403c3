"""The integer program over the aggregated instance, built with PuLP (see docs/optimization.md).

x_i = 1: job takes option i (alone on k GPUs of a type); y_g = 1: the jobs of group g (a
pair, or up to theta jobs) share one GPU. Each job takes at most one option or group; per GPU type and block size the
chosen GPUs fit the capacity level (aggregation.py). Admission is sum_j v_j * admitted_j.
"""
from dataclasses import dataclass

import pulp

from .choices import Choice
from .fairness import fairness_price_w, least_share, rate, tenant_sizes
from .instance import Instance


@dataclass
class Model:
    lp: pulp.LpProblem
    x: dict[int, pulp.LpVariable]
    y: dict[int, pulp.LpVariable]

    @property
    def size(self) -> tuple[int, int]:
        return len(self.lp.variables()), len(self.lp.constraints)

    def choices(self, inst: Instance) -> list[Choice]:
        out: list[Choice] = [None] * len(inst.jobs)
        for i, var in self.x.items():
            if (var.value() or 0) > 0.5:
                out[inst.all_options[i].job] = ("o", i)
        for p, var in self.y.items():
            if (var.value() or 0) > 0.5:
                for j in inst.groups[p].members:
                    out[j] = ("g", p)
        return out


def build(
    inst: Instance, *, phase: str, admit_floors: dict[int, float] | None = None, relaxed: bool = False,
    level: int | None = None,
) -> Model:
    """phase 'admit': maximise the admitted value (with `level`: only that priority level's
    admitted value, in units of its plain job, so the objective's coefficients are near 1);
    phase 'power': minimise cost. Both admit in each priority level at least
    `admit_floors[level]` (one constraint per level keeps coefficients near 1 instead of one
    constraint spanning all levels' magnitudes)."""
    sense = pulp.LpMaximize if phase == "admit" else pulp.LpMinimize
    lp = pulp.LpProblem(f"gogh_{phase}", sense)
    cat = pulp.LpContinuous if relaxed else pulp.LpBinary
    x = {i: pulp.LpVariable(f"x{i}", 0, 1, cat) for opts in inst.job_options for i in opts}
    y = {p: pulp.LpVariable(f"y{p}", 0, 1, cat) for p in range(len(inst.groups))}
    per_job: list[list] = [[] for _ in inst.jobs]
    for i, var in x.items():
        per_job[inst.all_options[i].job].append(var)
    for p, var in y.items():
        for j in inst.groups[p].members:
            per_job[j].append(var)
    admitted_terms, level_terms, units = {}, {}, level_units(inst)
    for j, vars_ in enumerate(per_job):
        if len(vars_) > 1:
            lp += pulp.LpAffineExpression([(v, 1) for v in vars_]) <= 1, f"one_{j}"
        terms = level_terms.setdefault(inst.jobs[j].priority, {})
        for v in vars_:
            admitted_terms[v] = admitted_terms.get(v, 0.0) + inst.values[j]
            terms[v] = terms.get(v, 0.0) + inst.values[j] / units[inst.jobs[j].priority]
    admitted = pulp.LpAffineExpression(list(admitted_terms.items()))
    usage: dict[tuple[str, int], list] = {}
    for i, var in x.items():
        for t, s, n in inst.usage(("o", i)):
            usage.setdefault((t, s), []).append((var, n))
    for p, var in y.items():
        usage.setdefault((inst.groups[p].gpu_type, 1), []).append((var, 1))
    free = inst.free()
    for (t, s), terms in usage.items():
        if sum(n for _, n in terms) > free[(t, s)]:
            lp += pulp.LpAffineExpression(terms) <= free[(t, s)], f"cap_{t}_{s}"
    if phase == "admit" and level is not None:
        lp += pulp.LpAffineExpression(list(level_terms.get(level, {}).items()))
    elif phase == "admit":
        lp += admitted
    else:
        cost = [(var, inst.all_options[i].cost) for i, var in x.items()] + [
            (var, inst.groups[p].cost) for p, var in y.items()
        ]
        price = fairness_price_w(inst)
        if price > 0:  # - lambda * z, z at most every tenant's share (fairness.py)
            z = pulp.LpVariable("least_share", 0)
            cost.append((z, -price))
            sizes = tenant_sizes(inst)
            shares: dict[str, dict] = {tenant: {z: 1.0} for tenant in sizes}  # z - share_t <= 0
            for var, choice in [(v, ("o", i)) for i, v in x.items()] + [(v, ("g", p)) for p, v in y.items()]:
                for j in inst.jobs_of(choice):  # a group's jobs are of one tenant: their terms add up
                    terms = shares[inst.jobs[j].tenant]
                    terms[var] = terms.get(var, 0.0) - rate(inst, j, choice) / sizes[inst.jobs[j].tenant]
            for n, tenant in enumerate(sorted(sizes)):
                lp += pulp.LpAffineExpression(list(shares[tenant].items())) <= 0, f"fair_{n}"
        lp += pulp.LpAffineExpression(cost)
    for lvl, floor in (admit_floors or {}).items():
        if floor > 0 and level_terms.get(lvl):
            lp += pulp.LpAffineExpression(list(level_terms[lvl].items())) >= floor - 1e-6, f"admit_{lvl}"
    return Model(lp, x, y)


def admitted_value(inst: Instance, choices: list[Choice]) -> float:
    return sum(inst.values[j] for j, c in enumerate(choices) if c is not None)


def level_units(inst: Instance) -> dict[int, float]:
    """The value of a plain job of each priority level (fairness adds at most half of it)."""
    units: dict[int, float] = {}
    for job, value in zip(inst.jobs, inst.values):
        if value > 0:
            units[job.priority] = min(units.get(job.priority, value), value)
    return units


def level_maxima(inst: Instance) -> dict[int, float]:
    """Per priority level, the admitted value (in units of its plain job) if every job of the
    level that has a configuration meeting T_min were admitted."""
    units = level_units(inst)
    out: dict[int, float] = {}
    for job, value in zip(inst.jobs, inst.values):
        if value > 0:
            out[job.priority] = out.get(job.priority, 0.0) + value / units[job.priority]
    return out


def admitted_by_level(inst: Instance, choices: list[Choice]) -> dict[int, float]:
    """Admitted value per priority level, in units of the level's plain job."""
    out: dict[int, float] = {}
    units = level_units(inst)
    for j, c in enumerate(choices):
        if c is not None and inst.values[j] > 0:
            level = inst.jobs[j].priority
            out[level] = out.get(level, 0.0) + inst.values[j] / units[level]
    return out


def total_cost(inst: Instance, choices: list[Choice]) -> float:
    return sum(inst.cost(j, c) for j, c in enumerate(choices))


def objective(inst: Instance, choices: list[Choice]) -> float:
    """The power phase's objective of a decision: its cost, less the fairness term."""
    price = fairness_price_w(inst)
    return total_cost(inst, choices) - (price * least_share(inst, choices) if price > 0 else 0.0)
