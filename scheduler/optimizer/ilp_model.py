"""The integer program over the aggregated instance, built with PuLP (see docs/optimization.md).

x_i = 1: job takes option i (alone on k GPUs of a type); y_g = 1: the jobs of group g (a
pair, or up to theta jobs) share one GPU. Each job takes at most one option or group; per GPU type and block size the
chosen GPUs fit the capacity level (aggregation.py). Admission is sum_j v_j * admitted_j.
"""
from collections import defaultdict
from dataclasses import dataclass, field

import pulp

from .admission_keeps import kept
from .choices import Choice
from .fairness import fairness_price_w, least_share, rate, tenant_sizes
from .instance import Instance
from .quota_split import split_type
from .quotas import POOL, use_of


@dataclass
class Model:
    lp: pulp.LpProblem
    x: dict[int, pulp.LpVariable]
    y: dict[int, pulp.LpVariable]
    # Per priority level, the in-quota admitted value's terms (quota copies; empty without them).
    in_quota: dict[int, dict] = field(default_factory=dict)

    def in_quota_by_level(self) -> dict[int, float]:
        """The solved in-quota admitted value per level (in units of the level's plain job)."""
        return {level: sum(c * (v.value() or 0.0) for v, c in terms.items()) for level, terms in self.in_quota.items()}

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
    level: int | None = None, quota_level: int | None = None, quota_floors: dict[int, float] | None = None,
) -> Model:
    """phase 'admit': maximise the admitted value (with `level`: only that priority level's
    admitted value, in units of its plain job, so the objective's coefficients are near 1; with
    `quota_level`: only that level's value admitted within its tenants' quotas);
    phase 'power': minimise cost. Both admit in each priority level at least
    `admit_floors[level]` and within quotas at least `quota_floors[level]` (one constraint per
    level keeps coefficients near 1 instead of one constraint spanning all levels' magnitudes)."""
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
        for t, s, n in inst.usage(("g", p)):
            usage.setdefault((t, s), []).append((var, n))
    free = inst.free()
    for n, ((t, s), terms) in enumerate(usage.items()):
        if sum(k for _, k in terms) > free[(t, s)]:
            name = f"cap_{t}_{s}" if s else f"quota_cap_{n}"  # a capped tenant's quota (quotas.quota_key)
            lp += pulp.LpAffineExpression(terms) <= free[(t, s)], name
    quota_floors = {lvl: f for lvl, f in (quota_floors or {}).items() if f > 0}
    in_quota = _in_quota_terms(inst, lp, x, y, cat, units) if quota_level is not None or quota_floors else {}
    if phase == "admit" and quota_level is not None:
        lp += _with_moves_of_kept(inst, x, y, quota_level, in_quota.get(quota_level, {}))
    elif phase == "admit" and level is not None:
        lp += _with_moves_of_kept(inst, x, y, level, level_terms.get(level, {}))
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
    for lvl, floor in quota_floors.items():
        if in_quota.get(lvl):
            lp += pulp.LpAffineExpression(list(in_quota[lvl].items())) >= floor - 1e-6, f"in_quota_{lvl}"
    return Model(lp, x, y, in_quota)


def _with_moves_of_kept(inst: Instance, x: dict, y: dict, level: int, value: dict) -> pulp.LpAffineExpression:
    """A level's admitted `value` (variable -> coefficient) less the moves of every kept job of
    a higher level (admission_keeps.py): each choice that moves one costs one more than the
    level's whole admitted value (in units of its plain job), so no number of the level's jobs
    admitted pays for the move."""
    price = 1.0 + level_maxima(inst).get(level, 0.0)
    terms = dict(value)
    for j, stays in kept(inst).items():
        if inst.jobs[j].priority > level:
            moves = [x[i] for i in inst.job_options[j] if ("o", i) not in stays]
            moves += [y[p] for p in inst.job_groups[j] if ("g", p) not in stays]
            for var in moves:
                terms[var] = terms.get(var, 0.0) - price
    return pulp.LpAffineExpression(list(terms.items()))


def _in_quota_terms(inst: Instance, lp, x: dict, y: dict, cat, units: dict[int, float]) -> dict[int, dict]:
    """The quota copies (docs/optimization.md, "Quotas"): for each choice of a job whose tenant
    has a quota on the choice's type, q <= the choice's variable says it is admitted within
    that quota; where the type has a cohort pool (GPUs no quota claims, quotas.Quotas.pool), a
    pool copy says it is admitted within the pool, and the two together count a choice once (a
    probe's choices have neither). Per tenant and type the GPUs of its copies fit the quota, per
    type the pool copies fit the pool. Returns, per priority level, the in-quota admitted
    value's terms (units of the level's plain job)."""
    quotas = inst.quotas
    terms: dict[int, dict] = {}
    per_quota: dict[tuple[str, str], list] = {}
    chosen = [(("o", i), v) for i, v in x.items()] + [(("g", p), v) for p, v in y.items()]
    for n, (choice, var) in enumerate(chosen):
        tenant, gpu_type, gpus = use_of(inst, choice)
        if any(inst.jobs[j].probe for j in inst.jobs_of(choice)):
            continue  # a probe takes only what every other job leaves (admission.probes_last), quota or not
        copies = []
        for owner, room in ((tenant, quotas.owns(tenant, gpu_type)), (POOL, quotas.pooled(tenant, gpu_type))):
            if room >= gpus:
                q = pulp.LpVariable(quota_copy_name(choice, owner == POOL), 0, 1, cat)
                per_quota.setdefault((owner, gpu_type), []).append((q, gpus))
                copies.append((q, 1))
        if not copies:
            continue
        lp += pulp.LpAffineExpression([*copies, (var, -1)]) <= 0, f"in_quota_of_{n}"
        for j in inst.jobs_of(choice):
            if inst.values[j] > 0:
                level = terms.setdefault(inst.jobs[j].priority, {})
                for q, _ in copies:
                    level[q] = level.get(q, 0.0) + inst.values[j] / units[inst.jobs[j].priority]
    for n, ((owner, gpu_type), copies) in enumerate(sorted(per_quota.items(), key=lambda kv: kv[0])):
        room = quotas.pool.get(gpu_type, 0) if owner == POOL else quotas.owns(owner, gpu_type)
        if sum(g for _, g in copies) > room:
            lp += pulp.LpAffineExpression(copies) <= room, f"quota_{n}"
    return terms


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


def quota_maxima(inst: Instance) -> dict[int, float]:
    """Per priority level, the in-quota admitted value (units as level_maxima) if every job of
    the level with a choice within its tenant's quota or the pool were admitted within it (none:
    no quotas)."""
    if not inst.quotas.nominal:
        return {}
    units = level_units(inst)
    out: dict[int, float] = {}
    for j, job in enumerate(inst.jobs):
        choices = [("o", i) for i in inst.job_options[j]] + [("g", p) for p in inst.job_groups[j]]
        if inst.values[j] > 0 and not job.probe and any(_room(inst, c) >= use_of(inst, c)[2] for c in choices):
            out[job.priority] = out.get(job.priority, 0.0) + inst.values[j] / units[job.priority]
    return out


def _room(inst: Instance, choice: Choice) -> int:
    """The most GPUs a choice's tenant may count within quota on its type: its quota or the pool."""
    tenant, gpu_type, _ = use_of(inst, choice)
    return max(inst.quotas.owns(tenant, gpu_type), inst.quotas.pooled(tenant, gpu_type))


def admitted_by_level(inst: Instance, choices: list[Choice]) -> dict[int, float]:
    """Admitted value per priority level, in units of the level's plain job."""
    out: dict[int, float] = {}
    units = level_units(inst)
    for j, c in enumerate(choices):
        if c is not None and inst.values[j] > 0:
            level = inst.jobs[j].priority
            out[level] = out.get(level, 0.0) + inst.values[j] / units[level]
    return out


def by_level(inst: Instance, choices: list[Choice]) -> list[float]:
    """A decision's admitted value per priority level, highest first: compared as lists, the
    decision that admits lexicographically more."""
    got = admitted_by_level(inst, choices)
    return [got.get(level, 0.0) for level in sorted({job.priority for job in inst.jobs}, reverse=True)]


def total_cost(inst: Instance, choices: list[Choice]) -> float:
    return sum(inst.cost(j, c) for j, c in enumerate(choices))


def objective(inst: Instance, choices: list[Choice]) -> float:
    """The power phase's objective of a decision: its cost, less the fairness term."""
    price = fairness_price_w(inst)
    return total_cost(inst, choices) - (price * least_share(inst, choices) if price > 0 else 0.0)


def quota_copy_name(choice: Choice, pooled: bool = False) -> str:
    """The name of a choice's quota copy, or its pool copy (stable across the phases' models:
    starts name it)."""
    return f"q{'p' if pooled else ''}{choice[0]}{choice[1]}"


def start_of(inst: Instance, choices: list[Choice]) -> dict[str, float]:
    """A decision as a start for a program (by variable name; every other variable 0): its
    options and groups chosen, its quota copies as ilp_model.in_quota_split counts them."""
    start = {(f"x{c[1]}" if c[0] == "o" else f"y{c[1]}"): 1.0 for c in choices if c is not None}
    start.update({quota_copy_name(c, pooled): 1.0 for c, pooled in in_quota_split(inst, choices)})
    return start


def in_quota_split(inst: Instance, choices: list[Choice]) -> list[tuple[Choice, bool]]:
    """The choices of a decision counted within quotas, (choice, in the pool), as the ILP's
    quota and pool copies can count them at best (quota_split.split_type, per GPU type; probes
    never)."""
    quotas = inst.quotas
    items: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for choice in sorted({c for c in choices if c is not None}):
        if not any(inst.jobs[x].probe for x in inst.jobs_of(choice)):
            tenant, gpu_type, n = use_of(inst, choice)
            items[gpu_type][tenant].append((choice, n, sum(inst.values[x] for x in inst.jobs_of(choice))))
    counted: list[tuple[Choice, bool]] = []
    for gpu_type in sorted(items):
        tenants = items[gpu_type]
        counted += split_type(tenants, {t: quotas.owns(t, gpu_type) for t in tenants}, quotas.pool.get(gpu_type, 0),
                              {t for t in tenants if quotas.pooled(t, gpu_type) > 0})
    return counted


def in_quota_value(inst, choices: list) -> dict[int, float]:
    """Per priority level, the admitted value (in units of the level's plain job, as
    admitted_by_level) a decision can count within its tenants' quotas (in_quota_split): what
    the ILP's quota copies count for it at best."""
    units = level_units(inst)
    out: dict[int, float] = {}
    for choice, _ in in_quota_split(inst, choices):
        for x in inst.jobs_of(choice):
            if inst.values[x] > 0:
                level = inst.jobs[x].priority
                out[level] = out.get(level, 0.0) + inst.values[x] / units[level]
    return out
