"""The aggregated model every solver works on: per job the options that meet its T_min,
co-location groups worth considering, capacity per GPU type, costs and admission values."""
from dataclasses import dataclass, field, replace

from .admission import admission_values, probes_last
from .aggregation import TypeCapacity, aggregate, block_sizes, usage_levels
from .at_risk import capacity_gpus
from .below_tmin import price_staying
from .board_speeds import at_board_speeds
from .candidates import group_candidates
from .choices import Choice, Group, Option
from .feasibility import layout_fits, margin, meets_tmin, memory_fits, option_cost, uncertainty, values_surplus
from .limit_levels import limit_levels
from .problem import JobSpec, Problem
from .quotas import Quotas, lift_within_quota, quota_key, use_of
from .weights import cluster_load, energy_weight


@dataclass
class Instance:
    problem: Problem
    jobs: tuple[JobSpec, ...]
    capacity: dict[str, TypeCapacity]
    sizes: tuple[int, ...]
    all_options: list[Option]  # every known configuration, also below T_min (for baselines)
    groups: list[Group]  # co-location candidates (candidates.py)
    job_options: list[list[int]] = field(default_factory=list)  # meeting T_min, for optimising solvers
    job_all_options: list[list[int]] = field(default_factory=list)
    job_groups: list[list[int]] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    memory: list[float | None] = field(default_factory=list)  # GB per GPU each job needs (None: unknown)
    weight: float = 1.0
    load: float = 0.0
    quotas: Quotas = field(default_factory=lambda: Quotas({}, frozenset()))

    def jobs_of(self, choice: Choice) -> tuple[int, ...]:
        """The jobs a (non-empty) choice places: a group's members, or an option's one."""
        kind, i = choice
        return self.groups[i].members if kind == "g" else (self.all_options[i].job,)

    def usage(self, choice: Choice) -> list[tuple[str, int, int]]:
        """(gpu type, block size, GPUs) that a choice takes from capacity; for a tenant that may
        not borrow also (its quota's key, 0, GPUs): its quota is a capacity of its own (free())."""
        if choice is None:
            return []
        kind, i = choice
        if kind == "g":
            out = [(self.groups[i].gpu_type, 1, 1)]
        else:
            opt = self.all_options[i]
            out = [(opt.gpu_type, s, opt.num_gpus) for s in usage_levels(opt.num_gpus, opt.consolidated, self.sizes)]
        if self.quotas.capped:
            tenant, gpu_type, n = use_of(self, choice)
            if tenant in self.quotas.capped:
                out.append((quota_key(tenant, gpu_type), 0, n))
        return out

    def type_of(self, choice: Choice) -> str:
        """The GPU type of a (non-empty) choice."""
        return self.groups[choice[1]].gpu_type if choice[0] == "g" else self.all_options[choice[1]].gpu_type

    def choice_cost(self, choice: Choice) -> float:
        """The whole objective cost of a (non-empty) choice: a group's for all its jobs."""
        return self.groups[choice[1]].cost if choice[0] == "g" else self.all_options[choice[1]].cost

    def held_by_partners(self, choices: list[Choice], j: int, g: int) -> list[tuple[int, Choice]] | None:
        """(partner, choice) for each distinct choice job j's partners in group g hold, when
        each is an option or a group within g (so releasing them all leaves no job outside g
        without a GPU); None when a partner waits or holds a group reaching beyond g."""
        members = set(self.groups[g].members)
        held: list[tuple[int, Choice]] = []
        for x in self.groups[g].partners_of(j):
            c = choices[x]
            if c is None or (c[0] == "g" and not set(self.groups[c[1]].members) <= members):
                return None
            if all(c != other for _, other in held):
                held.append((x, c))
        return held

    def joined(self, choices: list[Choice], j: int, g: int) -> list[Choice] | None:
        """What job j joining group g would release: the distinct choices of its partners,
        each one GPU of the group's type (a partner alone on one GPU, or a smaller group of
        the same jobs), so joining needs no new GPU; None otherwise."""
        held = self.held_by_partners(choices, j, g)
        gpu_type = self.groups[g].gpu_type
        if held is None or any(self.type_of(c) != gpu_type or (c[0] == "o" and self.all_options[c[1]].num_gpus != 1)
                               for _, c in held):
            return None
        return [c for _, c in held]

    def current_choice(self, j: int, slo_only: bool = True, use_groups: bool = True) -> Choice:
        """What job j holds now, where offered: its current option (among those meeting T_min
        with `slo_only`, which always include it) or, with `use_groups`, its running group."""
        if use_groups:
            running = [p for p in self.job_groups[j] if self.groups[p].current]
            if running:
                return ("g", self._at_current_limit(j, running, self.groups))
        options = [i for i in (self.job_options[j] if slo_only else self.job_all_options[j])
                   if self.all_options[i].current]
        return ("o", self._at_current_limit(j, options, self.all_options)) if options else None

    def _at_current_limit(self, j: int, indices: list[int], items: list) -> int:
        """Of job j's current options (or groups), which differ only in their power limit, the
        one at the limit it runs at now, else the first (the default limit)."""
        limit = self.jobs[j].current.power_limit_w if self.jobs[j].current is not None else None
        return min(indices, key=lambda i: items[i].power_limit_w != limit)

    def admission_order(self) -> list[int]:
        """Jobs by decreasing admission value; among equals, running/placed jobs first, then
        those needing the fewest GPUs (a shared GPU counts half), so that greedy fills admit
        as many jobs as they can; then by id, for determinism."""
        def need(j: int) -> float:
            sizes = [self.all_options[i].num_gpus for i in self.job_options[j]] + [0.5] * bool(self.job_groups[j])
            return min(sizes, default=float("inf"))

        return sorted(
            range(len(self.jobs)),
            key=lambda j: (-self.values[j], self.jobs[j].current is None, need(j), self.jobs[j].id),
        )

    def within_quota_first(self, order: list[int]) -> list[int]:
        """The order with the jobs that fit their tenant's quota (quotas.lift_within_quota) first:
        the ILP's greedy decision, its start and fallback, so that a fallback honours reclaim."""
        if not self.quotas.nominal:
            return order
        capacity = self.capacity
        lifted = lift_within_quota(self.problem, self.jobs,
                                   lambda job, gpu_type: _min_gpus_on(self.problem, job, gpu_type, capacity))
        first = {job.id for job, was in zip(lifted, self.jobs) if job.priority != was.priority}
        return sorted(order, key=lambda j: self.jobs[j].id not in first)

    def free(self) -> dict[tuple[str, int], int]:
        """Free GPUs per (type, block size), and per (quota key, 0) the quota of each tenant that
        may not borrow on each type (0 where it has none)."""
        free = {(t, s): n for t, cap in self.capacity.items() for s, n in cap.levels.items()}
        for tenant in self.quotas.capped:
            for gpu_type in self.capacity:
                free[(quota_key(tenant, gpu_type), 0)] = self.quotas.owns(tenant, gpu_type)
        return free

    def cost(self, job: int, choice: Choice) -> float:
        """Objective share of a job's choice (a group's cost is split evenly between its jobs)."""
        if choice is None:
            return 0.0
        kind, i = choice
        return self.groups[i].cost / len(self.groups[i].members) if kind == "g" else self.all_options[i].cost


def compile_instance(problem: Problem, *, lift_quotas: bool = False) -> Instance:
    """The instance of a problem; `lift_quotas` for the solvers that do not formulate quotas
    (quotas.lift_within_quota: the jobs within their tenant's quota admitted first). Types are
    planned at their boards' speeds (board_speeds.py), on the boards that take work (at_risk.py)."""
    problem = at_board_speeds(problem)
    settings = problem.settings
    capacity = aggregate(capacity_gpus(problem.gpus, problem.jobs))
    jobs = tuple(problem.jobs)
    if lift_quotas:
        jobs = lift_within_quota(problem, jobs, lambda job, gpu_type: _min_gpus_on(problem, job, gpu_type, capacity))
    jobs = probes_last(jobs)
    largest = max((c.largest_node for c in capacity.values()), default=1)
    sizes = block_sizes(largest)
    gpu_by_id = {g.id: g for g in problem.gpus}
    gpus_of = {job.id: job.current.gpu_ids for job in jobs if job.current is not None}
    currents = [_current_config(job, gpu_by_id, gpus_of) for job in jobs]
    demand = sum(_min_gpus(problem, job, capacity) for job in jobs)
    load = cluster_load(demand, sum(c.gpus for c in capacity.values()))
    weight = settings.base_energy_weight
    if settings.adaptive_weight:
        weight = energy_weight(
            base=settings.base_energy_weight,
            current_load=load,
            history=problem.load_history,
            window=settings.load_window,
            clip=settings.weight_clip,
        )
    idle_on = not settings.idle_gpus_powered_down
    memory = [memory_need(problem, job) for job in jobs]
    all_options: list[Option] = []
    for j, job in enumerate(jobs):
        for gpu_type in capacity:
            if not memory_fits(memory[j], problem.gpu_types[gpu_type]) or job.only_gpu_type not in (None, gpu_type):
                continue
            all_options.extend(
                _job_options(problem, j, job, gpu_type, capacity[gpu_type], sizes, currents[j], weight, idle_on)
            )
    options_idx = _useful(all_options, values_surplus(settings), {j for j, job in enumerate(jobs) if job.pace > 0})
    # Pairs are matched on what the jobs cost alone at the default limit: a lower limit makes
    # running alone cheaper, and matching against it formed fewer pairs, so fewer jobs fit the
    # cluster (bench_solver at 256 GPUs admitted one job less). Each pair matched is then
    # offered at its own limits (candidates.py).
    cheapest_alone = [float("inf")] * len(jobs)
    for opt in all_options:
        if opt.power_limit_w is None and (opt.meets_slo or opt.current):
            cheapest_alone[opt.job] = min(cheapest_alone[opt.job], opt.cost)
    groups = group_candidates(problem, jobs, capacity, currents, weight, idle_on, cheapest_alone, memory)
    inst = Instance(
        problem=problem,
        jobs=jobs,
        capacity=capacity,
        sizes=sizes,
        all_options=all_options,
        groups=groups,
        memory=memory,
        weight=weight,
        load=load,
        quotas=Quotas.of(problem),
    )
    inst.job_options = [[] for _ in jobs]
    inst.job_all_options = [[] for _ in jobs]
    inst.job_groups = [[] for _ in jobs]
    for i, opt in enumerate(all_options):
        if opt.power_limit_w is None:  # the baselines plan at the default limit
            inst.job_all_options[opt.job].append(i)
    for i in options_idx:
        inst.job_options[all_options[i].job].append(i)
    for i, group in enumerate(groups):
        for x in group.members:
            inst.job_groups[x].append(i)
    price_staying(inst)
    _pin(inst, currents)
    inst.values = admission_values(
        jobs, settings.fairness_weight > 0, [bool(inst.job_options[j] or inst.job_groups[j]) for j in range(len(jobs))]
    )
    return inst


def _pin(inst: Instance, currents: list) -> None:
    """A pinned job (in its move cool-down, keep_work.py) keeps its current configuration: its
    current option, or, sharing a GPU now, its group (candidates.py offers it no other) or that
    GPU alone when its partners leave (placement.py keeps it on its GPU). Where none of these is
    offered any more (its current configuration is gone), it is not held to it."""
    for j, job in enumerate(inst.jobs):
        if not job.pinned or currents[j] is None:
            continue
        kept = [i for i in inst.job_options[j] if _stays(inst.all_options[i], currents[j])]
        if kept or inst.job_groups[j]:
            inst.job_options[j] = kept
            inst.job_all_options[j] = [i for i in inst.job_all_options[j] if _stays(inst.all_options[i], currents[j])]


def _stays(opt: Option, current: tuple) -> bool:
    """An option a pinned job may take: its current one, or, sharing a GPU now, one GPU of that type."""
    gpu_type, _, _, partners = current
    return opt.current or bool(partners) and (opt.gpu_type, opt.num_gpus) == (gpu_type, 1)


def _current_config(job: JobSpec, gpu_by_id, gpus_of: dict) -> tuple[str, int, bool, tuple[str, ...]] | None:
    """(type, GPUs, consolidated, partners) of a job's current placement, if all its GPUs
    remain. Partners are those still in the problem on the same GPUs: a partner that ended
    since (its allocation rows are closed, the survivors' still name it until this round
    writes theirs) no longer shares, and counting it made every choice of the survivor a
    migration, so it moved to any free GPU and restarted."""
    if job.current is None or not job.current.gpu_ids:
        return None
    gpus = [gpu_by_id.get(g) for g in job.current.gpu_ids]
    if any(g is None for g in gpus) or len({g.gpu_type for g in gpus}) != 1:
        return None
    partners = tuple(p for p in job.current.partners if gpus_of.get(p) == job.current.gpu_ids)
    return gpus[0].gpu_type, len(gpus), len({g.node for g in gpus}) == 1, partners


def _min_gpus(problem: Problem, job: JobSpec, capacity) -> int:
    """GPUs the job needs at least to meet T_min (its D_j if nothing meets it): the load measure."""
    best = job.max_gpus
    for gpu_type in capacity:
        for k in block_sizes(job.max_gpus):
            tau = problem.predictions.tau(job.workload, gpu_type, k, True)
            if meets_tmin(tau, job):
                best = min(best, k)
                break
    return best


def _min_gpus_on(problem: Problem, job: JobSpec, gpu_type: str, capacity) -> int | None:
    """GPUs of the type the job needs at least to meet T_min (None: the cluster lacks the type,
    or no block of it within D_j does)."""
    if gpu_type not in capacity or job.only_gpu_type not in (None, gpu_type):
        return None
    for k in block_sizes(min(job.max_gpus, capacity[gpu_type].gpus)):
        if meets_tmin(problem.predictions.tau(job.workload, gpu_type, k, True), job):
            return k
    return None


def memory_need(problem: Problem, job: JobSpec) -> float | None:
    """GB per GPU the job needs: what its submitter said, else the most its workload was
    measured to use (predictions.memory_gb, where the predictions offer it), else unknown
    (None: then the catalog's throughputs, which are 0 where a workload does not fit a
    type, are all the model knows)."""
    if job.memory_gb is not None:
        return job.memory_gb
    measured = getattr(problem.predictions, "memory_gb", None)
    return measured(job.workload) if measured is not None else None


def power_per_gpu_alone(problem: Problem, workload: str, gpu_type: str) -> float:
    """W per GPU of a workload running alone (draw_alone with the problem's predictions and the
    type's power curve). The trade-off page prices where jobs run now by the same rule as the
    options a solver chooses from."""
    return draw_alone(problem.predictions, workload, gpu_type, problem.gpu_types[gpu_type].power_curve)


def draw_alone(predictions, workload: str, gpu_type: str, power_curve) -> float:
    """`predictions`' measured power of the workload alone on the type where known, else
    `power_curve` at its utilization (full load when that is unknown too)."""
    measured = predictions.power_w(workload, gpu_type)
    if measured is not None:
        return measured
    util = predictions.utilization(workload, gpu_type)
    return power_curve(1.0 if util is None else util)


def _job_options(problem, j, job, gpu_type, cap, sizes, current, weight, idle_on) -> list[Option]:
    """Job j alone on k GPUs of the type, each layout, where its throughput is known; a probe on
    exactly the largest block within D_j, at any throughput (unknown: 0, what it will measure).
    Each configuration also at the type's lower power limits where they pay (limit_levels.py)."""
    spec = problem.gpu_types[gpu_type]
    settings = problem.settings
    per_gpu = power_per_gpu_alone(problem, job.workload, gpu_type)
    limits = limit_levels(problem, job.workload, gpu_type) if not job.probe else ()
    out = []
    counts = block_sizes(min(job.max_gpus, cap.gpus))
    if job.probe:
        counts = counts[-1:] if block_sizes(job.max_gpus)[-1] <= cap.gpus else ()
    for k in counts:
        for consolidated in (True, False) if k > 1 else (True,):
            if not layout_fits(k, consolidated, cap):
                continue
            tau = problem.predictions.tau(job.workload, gpu_type, k, consolidated) or 0.0
            if tau <= 0 and not job.probe:
                continue
            is_current = current is not None and current[:2] == (gpu_type, k) and not current[3] and (
                k == 1 or current[2] == consolidated
            )
            power = k * per_gpu
            migrates = current is not None and not is_current
            cost = option_cost(job, spec, settings, k, tau, power, weight, idle_on, migrates)
            sure = sure_share(problem, job, gpu_type, k, consolidated)
            default = Option(j, gpu_type, k, consolidated, tau, power, cost,
                             job.probe or meets_tmin(tau * sure, job), is_current)
            out.append(default)
            for limit_w, speed, fraction in limits:
                # A lower limit changes no GPU: the job keeps its configuration (and its GPUs where
                # it has them now), so the option is as current as the default one and moves as little.
                at_tau, at_power = tau * speed, min(power * fraction, k * limit_w)
                at_cost = option_cost(job, spec, settings, k, at_tau, at_power, weight, idle_on, migrates)
                if meets_tmin(at_tau * sure, job) and at_cost < cost:
                    out.append(replace(default, tau=at_tau, power_w=at_power, cost=at_cost, meets_slo=True,
                                       power_limit_w=limit_w))
                    cost = at_cost
    return out


def sure_share(problem: Problem, job: JobSpec, gpu_type: str, k: int, consolidated: bool) -> float:
    """The share of the job's predicted throughput on a configuration it may count on for its
    T_min (feasibility.margin: all of it where measured)."""
    if problem.settings.unmeasured_margin_z == 0:
        return 1.0
    log_sd, measured = uncertainty(problem.predictions, job.workload, gpu_type, k, consolidated)
    return margin(log_sd, measured, problem.settings)


def _useful(options: list[Option], keep_surplus: bool, paced: set[int]) -> list[int]:
    """Indices of options meeting T_min, and of every job's current option even below it
    (predictions may have fallen since it was placed: stopping it would lose its work, moving
    it elsewhere is still open); without a value on surplus throughput (neither
    throughput_value_w nor a fairness weight, nor a pace for the job: `paced`), a larger
    configuration of the same type and placement style only costs more, so it is dropped, and
    of one configuration's power limits only the cheapest is kept."""
    best: dict[tuple, int] = {}
    keep = []
    for i, opt in enumerate(options):
        if not opt.meets_slo and not opt.current:
            continue
        if keep_surplus or opt.current or opt.job in paced:
            keep.append(i)
            continue
        key = (opt.job, opt.gpu_type, opt.consolidated)
        if key not in best or (opt.num_gpus, opt.cost) < (options[best[key]].num_gpus, options[best[key]].cost):
            best[key] = i
    return sorted(set(keep) | set(best.values()))
