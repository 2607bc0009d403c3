"""Reads that turn the database into an optimisation Problem (the shell side of the
functional core): the jobs still to run, the GPUs that can take work, the catalog's GPU types
and measurements, the solver settings, the load history of earlier rounds, and what each
placed or running job would lose if moved or stopped (optimizer.keep_work); inference services'
replicas flagged, first when SolverConfig.services_first, and the training partners of a
replica whose shared GPU no longer gives it its T_min released (optimizer.service_partners,
docs/services.md)."""
from collections import Counter
from dataclasses import replace

from django.db.models import F, OuterRef, Subquery
from django.utils import timezone

from catalog.measurement_record import MeasurementRecord
from catalog.models import GpuType
from catalog.predictors.data import apply_policy, cell_is_known, peak_memory
from catalog.selectors import latest_estimates_by_workload, learnt_limits, reference_draws
from catalog.services.predictors_store import catalog_policy, catalog_window_records
from telemetry.models import Gpu, GpuState, NodeState

from .boards import with_boards
from .lifecycle import JobState
from .models import (
    Allocation,
    Job,
    JobMeasurement,
    Service,
    SolveRun,
    SolverConfig,
    Tenant,
    TenantQuota,
    TenantUsage,
)
from .optimizer import (
    CurrentPlacement,
    GpuSpec,
    GpuTypeSpec,
    JobSpec,
    PowerCurve,
    Problem,
    RunningWork,
    SolverSettings,
    keep_work,
)
from .optimizer.catalog_predictions import CatalogPredictions
from .optimizer.entitlement import behind_entitlement
from .optimizer.finish_time import job_pace, shared_by_tenants
from .optimizer.keep_work import MeasuredRate
from .optimizer.limit_levels import type_levels
from .optimizer.problem import QuotaSpec
from .optimizer.service_partners import release_outgrown
from .predictions import LearnedPredictions, WorkloadEstimates
from .profiling.planning import as_probes
from .selectors import moves_so_far, preemptions_last_hour, restart_overheads

ACTIVE_STATES = (JobState.PENDING.value, JobState.PLACED.value, JobState.RUNNING.value)


def solver_settings(config: SolverConfig, *, solver: str | None = None) -> SolverSettings:
    return SolverSettings(
        solver=solver or config.solver,
        backend=config.backend,
        time_limit_s=config.time_limit_s,
        gap=config.gap,
        base_energy_weight=config.base_energy_weight,
        adaptive_weight=config.adaptive_weight,
        load_window=config.load_window,
        throughput_value_w=config.throughput_value_w,
        fairness_weight=config.fairness_weight,
        theta=config.theta,
        migration_cost_w=config.migration_cost_w,
        move_cooldown_s=config.move_cooldown_s,
        move_hysteresis=config.move_hysteresis,
        max_preemptions_per_hour=config.max_preemptions_per_hour,
        max_moves_per_job=config.max_moves_per_job,
        idle_gpus_powered_down=config.idle_gpus_powered_down,
        power_limits=config.power_limits,
        topology_isolation=config.topology_isolation,
        cell_size_gpus=config.cell_size_gpus,
        seed=config.seed,
    )


def policy_groups() -> dict[tuple, list[MeasurementRecord]]:
    """The catalog's records per configuration under the predictors' catalog policy
    (catalog.predictors.data): the newest GOGH_PREDICTOR_WINDOW records, telemetry outliers
    dropped. Only the windows are read, not the history behind them."""
    policy = catalog_policy()
    return apply_policy(catalog_window_records(policy.window), policy)


def catalog_predictions(groups: dict[tuple, list[MeasurementRecord]] | None = None) -> CatalogPredictions:
    """What the catalog measured, per configuration, under the catalog policy, a configuration
    that only telemetry has seen fewer than GOGH_PREDICTOR_MIN_SAMPLES times left unknown, for
    the predictions to fill."""
    policy = catalog_policy()
    return CatalogPredictions(
        record
        for group in (policy_groups() if groups is None else groups).values()
        if cell_is_known(group, policy)
        for record in group
    )


def planning_predictions(workloads: set[str], *, include_shadow: bool = False) -> LearnedPredictions:
    """Measured means, with the newest P1/P2 estimates of the jobs' workloads where nothing was
    measured; memory needs from the peaks seen of each workload running alone, over the same
    records (one read of the catalog for both); speed and power at limits from the model at the
    workloads' reference draws, corrected by their limit observations."""
    groups = policy_groups()
    estimates = latest_estimates_by_workload(names=workloads, include_shadow=include_shadow)
    peaks = peak_memory(groups)
    return LearnedPredictions(
        catalog_predictions(groups),
        {name: WorkloadEstimates.from_record(e) for name, e in estimates.items()},
        memory_gb={name: peaks[name] for name in workloads if name in peaks},
        limits=learnt_limits(names=workloads),
        draws=reference_draws(names=workloads),
    )


def problem_from_database(config: SolverConfig, *, solver: str | None = None) -> Problem:
    settings = solver_settings(config, solver=solver)
    kept_jobs, kept_gpus = _kept_in_place()
    gpus = (
        Gpu.objects.filter(state=GpuState.HEALTHY, node__state=NodeState.READY, node__approved_at__isnull=False,
                           external_holder="")
        .exclude(pk__in=kept_gpus)
        .select_related("node", "gpu_type")
        .order_by("node__hostname", "index")
    )
    gpu_specs = tuple(
        GpuSpec(str(g.pk), g.node.hostname, g.gpu_type.name, g.pcie_switch, g.node.cell) for g in gpus
    )
    boards = _boards_by_type(gpus) if settings.power_limits else {}
    types = {
        t.name: GpuTypeSpec(
            t.name, t.memory_gb, t.idle_w, t.tdp_w, PowerCurve.from_points(t.power_curve, t.idle_w, t.tdp_w),
            settings.theta, type_levels(t.tdp_w, boards[t.name]) if t.name in boards else (),
        )
        for t in GpuType.objects.filter(name__in={g.gpu_type for g in gpu_specs})
    }
    gpu_specs, types = with_boards(list(gpus), gpu_specs, types)  # each board's speed and power curve
    jobs = (
        Job.objects.filter(state__in=ACTIVE_STATES).exclude(pk__in=kept_jobs)
        .select_related("workload", "tenant").order_by("pk")
    )
    jobs = list(jobs)
    current = _current_placements()
    fair_share = dict(TenantUsage.objects.values_list("tenant_id", "factor"))  # none yet: 1.0, as all others
    at_risk = _slo_at_risk({job.service_id for job in jobs} - {None})
    job_specs = tuple(
        JobSpec(
            id=str(job.pk),
            workload=job.workload.name,
            tenant=job.tenant.slug,
            min_throughput=job.min_throughput,
            max_gpus=job.max_gpus,
            priority=job.priority,
            memory_gb=job.memory_gb,
            current=current.get(job.pk),
            fair_share=fair_share.get(job.tenant_id, 1.0),
            service=job.service_id is not None,
            alone=job.service_id in at_risk,
        )
        for job in jobs
    )
    job_specs = services_first(job_specs) if config.services_first else job_specs
    job_specs = _campaign_jobs_as_probes(job_specs)
    history = tuple(
        reversed(
            SolveRun.objects.filter(dry_run=False, load__isnull=False)
            .order_by("-started_at", "-id")
            .values_list("load", flat=True)[: settings.load_window]
        )
    )
    works = running_work([job for job in jobs if job.pk in current])
    at_risk = frozenset(g.id for g in gpu_specs if g.at_risk)  # their jobs leave them (keep_work)
    job_specs = keep_work([(spec, works.get(int(spec.id))) for spec in job_specs], settings, at_risk)
    predictions = planning_predictions({j.workload for j in job_specs}, include_shadow=config.shadow_mode)
    shares = dict(Tenant.objects.values_list("slug", "shares"))
    job_specs = _with_paces(job_specs, jobs, predictions, gpu_specs, kept_jobs, kept_gpus, len(shares))
    if shared_by_tenants(len(shares)):
        job_specs = behind_entitlement(job_specs, len(gpu_specs), shares, predictions, types)
    return release_outgrown(Problem(
        jobs=job_specs, gpus=gpu_specs, gpu_types=types,
        predictions=predictions,
        settings=settings, load_history=history, quotas=_quotas(kept_jobs),
        no_borrowing=frozenset(Tenant.objects.filter(may_borrow=False).values_list("slug", flat=True)),
    ))


def _with_paces(specs, jobs, predictions, gpu_specs, kept_jobs, kept_gpus, tenants: int) -> tuple[JobSpec, ...]:
    """Each training job's pace (optimizer.finish_time, as simulate computes it): its time since
    submission and its steps left, against its time with 1/n of every usable GPU (the round's
    and those of jobs kept in place), n the active jobs. A job that gave no total_steps, and a
    service replica, keep none; nor does any job while the cluster has one tenant (`tenants`)."""
    if not shared_by_tenants(tenants):
        return specs
    capacity = Counter(g.gpu_type for g in gpu_specs)
    capacity.update(Gpu.objects.filter(pk__in=kept_gpus, external_holder="").values_list("gpu_type__name", flat=True))
    n, now, by_id = len(jobs) + len(kept_jobs), timezone.now(), {str(job.pk): job for job in jobs}
    out = []
    for spec in specs:
        job = by_id.get(spec.id)
        if job is None or not job.total_steps or spec.service or spec.probe:
            out.append(spec)
            continue
        out.append(replace(spec, pace=job_pace(
            predictions, capacity, n, workload=spec.workload, max_gpus=spec.max_gpus,
            min_throughput=spec.min_throughput, elapsed_s=(now - job.submitted_at).total_seconds(),
            remaining_steps=job.total_steps - (job.steps_done or 0), total_steps=job.total_steps)))
    return tuple(out)


def services_first(specs: tuple[JobSpec, ...]) -> tuple[JobSpec, ...]:
    """SolverConfig.services_first (docs/services.md): every service replica's priority lifted
    above every training job's, their order among themselves kept, so that a waiting replica
    outranks even a placed training job (keep_work's levels) and may preempt it."""
    replicas = [spec.priority for spec in specs if spec.service]
    training = [spec.priority for spec in specs if not spec.service]
    if not replicas or not training:
        return specs
    lift = max(max(training) + 1 - min(replicas), 0)
    return tuple(replace(spec, priority=spec.priority + lift) if spec.service else spec for spec in specs)


def _boards_by_type(gpus) -> dict[str, list[tuple]]:
    """Per GPU type, what each of the round's GPUs reported of its power limits: (lowest and
    highest allowed, default, why the last limit was refused) (limit_levels.type_levels)."""
    out: dict[str, list[tuple]] = {}
    for name, low, high, default, error in gpus.values_list(
        "gpu_type__name", "power_limit_min_w", "power_limit_max_w", "power_limit_default_w", "power_limit_error"
    ):
        out.setdefault(name, []).append((low, high, default, error))
    return out


def _quotas(kept_jobs: set[int]) -> tuple[QuotaSpec, ...]:
    """Every tenant's quota per GPU type (TenantQuota), less the GPUs its kept-in-place jobs
    hold (_kept_in_place): those jobs and GPUs are left out of the problem, yet their GPUs
    count against their tenant's quota (a GPU its jobs share, once)."""
    held = Counter(
        (slug, gpu_type) for slug, gpu_type, _ in set(
            Allocation.objects.filter(end__isnull=True, job_id__in=kept_jobs)
            .values_list("job__tenant__slug", "gpu__gpu_type__name", "gpu_id")
        )
    )
    rows = TenantQuota.objects.order_by("tenant__slug", "gpu_type__name").values_list(
        "tenant__slug", "gpu_type__name", "gpus"
    )
    return tuple(QuotaSpec(slug, gpu_type, max(0, gpus - held[(slug, gpu_type)])) for slug, gpu_type, gpus in rows)


def _campaign_jobs_as_probes(specs: tuple[JobSpec, ...]) -> tuple[JobSpec, ...]:
    """Profiling campaigns' jobs run as probes on their campaign's GPU type (scheduler.profiling)."""
    return as_probes(specs)


def _kept_in_place() -> tuple[set[int], set[int]]:
    """(job ids, GPU ids) that a round leaves out: a draining node keeps its running work until
    it ends (docs/inventory.md) and takes no new work. The jobs with an open allocation on a
    draining node stay where they are, and so, transitively, does every job sharing a GPU with
    one of them; none of their GPUs (also those of a job spread onto a ready node) takes another
    job. Left in the problem, the optimiser saw such a job's GPUs gone and moved it away.
    The same holds for a GPU a run GOGH did not submit holds (Gpu.external_holder, a job
    submitted straight to Slurm): nothing new goes there, and a job of GOGH's allocated there
    keeps its allocation: stopping it is GOGH's decision (the executor's sync), not the holder's."""
    rows = list(
        Allocation.objects.filter(end__isnull=True).values_list(
            "job_id", "gpu_id", "gpu__node__state", "gpu__external_holder"
        )
    )
    jobs = {job_id for job_id, _, state, holder in rows if state == NodeState.DRAINING or holder}
    while True:
        gpus = {gpu_id for job_id, gpu_id, _, _ in rows if job_id in jobs}
        sharing = {job_id for job_id, gpu_id, _, _ in rows if gpu_id in gpus}
        if sharing <= jobs:
            return jobs, gpus
        jobs |= sharing


def _slo_at_risk(service_ids: set[int]) -> set[int]:
    """The services among `service_ids` whose plan says their SLO is at risk (Service.slo_note):
    their replicas run alone (JobSpec.alone)."""
    if not service_ids:
        return set()
    return set(Service.objects.filter(pk__in=service_ids).exclude(slo_note="").values_list("pk", flat=True))


def _current_placements() -> dict[int, CurrentPlacement]:
    """Each placed job's GPUs, the jobs sharing them (ids as strings, sorted) and the power
    limit the round set on them (one per job: its GPUs share it), in two queries: the open
    rows, then their partner links."""
    by_job: dict[int, list] = {}
    partners: dict[int, set[int]] = {}
    limits: dict[int, float] = {}
    for job_id, gpu_id, limit in Allocation.objects.filter(end__isnull=True).values_list(
        "job_id", "gpu_id", "power_limit_w"
    ):
        by_job.setdefault(job_id, []).append(str(gpu_id))
        if limit is not None:
            limits[job_id] = limit
    for job_id, partner_id in Allocation.partners.through.objects.filter(allocation__end__isnull=True).values_list(
        "allocation__job_id", "job_id"
    ):
        partners.setdefault(job_id, set()).add(partner_id)
    return {
        job_id: CurrentPlacement(
            tuple(sorted(gpus)), tuple(sorted(str(p) for p in partners.get(job_id, ()))), limits.get(job_id),
        )
        for job_id, gpus in by_job.items()
    }


def running_work(jobs: list[Job], *, now=None) -> dict[int, RunningWork]:
    """{job id: what it would lose if stopped now} for placed and running jobs (with an open
    allocation): progress since its checkpoint, the steps left, its rate (the newest
    throughput its agent observed where it runs now, else the round's prediction), all its agent
    observed there (since its open allocation began: its GPUs, and its partners on a shared GPU;
    keep_work.below_tmin reads their mean), its power
    (the predicted power of its open allocations), its workload's restart overhead
    (selectors.restart_overheads), the seconds since it was placed or moved, its preemptions in
    the last hour and its moves so far."""
    now = now or timezone.now()
    ids = [job.pk for job in jobs]
    rows: dict[int, list[tuple]] = {}
    for job_id, throughput, power in Allocation.objects.filter(job_id__in=ids, end__isnull=True).values_list(
        "job_id", "predicted_throughput", "predicted_power_w"
    ):
        rows.setdefault(job_id, []).append((throughput, power))
    observed = _observed_where_it_runs(jobs)
    overheads = restart_overheads({job.workload.name for job in jobs})
    preempted = preemptions_last_hour(ids, now=now)
    moved = moves_so_far(ids)
    out = {}
    for job in jobs:
        held = rows.get(job.pk, [])
        powers = [power for _, power in held if power is not None]
        out[job.pk] = RunningWork(
            steps_since_checkpoint=max(job.current_step - (job.checkpoint_step or 0), 0),
            remaining_steps=max(job.total_steps - job.current_step, 0) if job.total_steps is not None else None,
            steps_per_s=observed.get(job.pk, [None])[-1] or next((t for t, _ in held if t), None),
            power_w=sum(powers) if powers else None,
            num_gpus=len(held),
            restart_overhead_s=overheads.get(job.workload.name, 0.0),
            placed_s_ago=(now - job.placed_at).total_seconds() if job.placed_at else float("inf"),
            preemptions_last_hour=preempted.get(job.pk, 0),
            running=job.state == JobState.RUNNING.value,
            moves=moved.get(job.pk, 0),
            measured=MeasuredRate.of(observed.get(job.pk, ())),
            checkpointed=bool(job.checkpoint_step),
        )
    return out


def _observed_where_it_runs(jobs: list[Job]) -> dict[int, list[float]]:
    """{job id: the throughputs its agent observed since its open allocation began, oldest
    first}: where it runs now, on its GPUs beside its partners (a partner that joins or leaves
    reopens the allocation, services.change_partners; one measured before was another rate)."""
    began = Allocation.objects.filter(job_id=OuterRef("job_id"), end__isnull=True).order_by("-start").values("start")
    observed: dict[int, list[float]] = {}
    for job_id, throughput in (
        JobMeasurement.objects.filter(job_id__in=[job.pk for job in jobs if job.placed_at is not None])
        .annotate(began=Subquery(began[:1]))
        .filter(measurement__observed_at__gte=F("began"))
        .order_by("measurement__observed_at", "measurement_id")
        .values_list("job_id", "measurement__throughput")
    ):
        observed.setdefault(job_id, []).append(throughput)
    return observed
