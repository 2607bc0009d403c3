"""Writes for inference services (docs/services.md): create one with its replicas, stop one,
and each round's plan: the rate to plan for, the calibration, how many replicas and the T_min
each must give, written onto the service and its replica jobs.

A replica is an ordinary job (Job.service set, one GPU, no total steps), submitted through
scheduler.services.job_submit like any other, so the rounds place, move and preempt it by the
same rules; only its T_min is not typed but derived here every round."""
import logging
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from gogh_web.activity import announce

from .. import live
from ..lifecycle import JobState
from ..models import Job, Service, ServiceState, SolverConfig
from ..problem_source import planning_predictions, solver_settings
from ..selectors import restart_overheads, tenant_of
from ..services import executor_sync_request, job_cancel, job_submit, job_transition
from . import forecast, latency, selectors
from .live import services_changed
from .replicas import ReplicaPlan, fastest_single_gpu, plan_replicas, surest_single_gpu
from .validation import service_problems

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Speeds:
    """What a plan needs of the predictions, read once for every service of a round."""

    predictions: object
    gpu_types: list[str]
    settings: object  # the rounds' SolverSettings: what the optimiser counts on of an unmeasured type

    @classmethod
    def load(cls, workloads: set[str]) -> "Speeds":
        return cls(planning_predictions(workloads), selectors.cluster_gpu_types(), solver_settings(SolverConfig.load()))

    def fastest(self, workload: str) -> tuple[str, float] | None:
        return fastest_single_gpu(self.predictions, workload, self.gpu_types)

    def surest(self, workload: str) -> float | None:
        return surest_single_gpu(self.predictions, workload, self.gpu_types, self.settings)


def service_create(*, owner, data: dict) -> Service:
    """Create a service and its min_replicas replicas (pending, as any submitted job) in the
    owner's tenant. `data`: name, workload (a catalog Workload), latency_bound_ms and optionally
    min_replicas, max_replicas, batch_size (default: the workload's), expected_rate_rps,
    priority, command, environment. Bad input raises ValidationError (field -> messages) and
    writes nothing."""
    tenant = tenant_of(owner)
    if tenant is None:
        raise ValidationError({"tenant": "Your account belongs to no tenant; ask an administrator to add you to one."})
    workload = data["workload"]
    data = {"min_replicas": 1, "max_replicas": 1, "expected_rate_rps": 0.0, **data}
    if data.get("batch_size") is None:
        data["batch_size"] = workload.batch_size or 1
    margin = SolverConfig.load().service_latency_margin
    speeds = Speeds.load({workload.name})
    problems = service_problems(data, speeds.fastest(workload.name), margin)
    if problems:
        raise ValidationError(problems)
    with transaction.atomic():
        service = Service.objects.create(owner=owner, tenant=tenant, **data)
        plan = _planned(service, speeds, margin, data["expected_rate_rps"])
        _write_plan(service, plan, data["expected_rate_rps"], timezone.now())
        for _ in range(service.min_replicas):
            _add_replica(service, plan.steps_per_s)
        announce("service %s created by %s (tenant %s): %s, P99 <= %g ms, %s-%s replicas", service.pk,
                 owner.get_username(), tenant.slug, workload.name, service.latency_bound_ms, service.min_replicas,
                 service.max_replicas)
        services_changed([service.pk])
    return service


def service_stop(*, service: Service, by) -> Service:
    """Stop a service: every replica not yet ended is cancelled. Only members of its tenant and
    staff may (PermissionDenied); a stopped service raises ValidationError."""
    if not selectors.may_manage(by, service):
        raise PermissionDenied(f"Service {service.pk} belongs to another tenant.")
    with transaction.atomic():
        service = Service.objects.select_for_update().get(pk=service.pk)
        if service.state == ServiceState.STOPPED:
            raise ValidationError({"state": [f"Service {service.pk} is already stopped."]})
        for replica in selectors.live_replicas(service):
            job_cancel(job=replica, by=by, reason=f"Service {service.pk} ({service.name}) stopped.")
        service.state, service.stopped_at = ServiceState.STOPPED, timezone.now()
        service.save(update_fields=["state", "stopped_at", "updated_at"])
        announce("service %s stopped by %s", service.pk, by.get_username())
        services_changed([service.pk])
    return service


def services_plan(*, now=None) -> list[Service]:
    """The round's step for every active service (docs/services.md, "What a round does"): the
    forecast rate, the calibration, the plan, written onto the service; every live replica's
    T_min set to the plan's; replicas added up to the plan or the surplus cancelled. Each
    service in its own transaction, its row locked: two rounds that overlap plan it in turn."""
    now = now or timezone.now()
    services = list(Service.objects.filter(state=ServiceState.ACTIVE).select_related("workload"))
    if not services:
        return []
    margin = SolverConfig.load().service_latency_margin
    speeds = Speeds.load({service.workload.name for service in services})
    overheads = restart_overheads({service.workload.name for service in services})
    planned = []
    for service in services:
        horizon_s = settings.GOGH_SCHEDULING_INTERVAL_S + overheads.get(service.workload.name, 0.0)
        try:
            with transaction.atomic():
                service = Service.objects.select_for_update().select_related("workload", "owner", "tenant").get(
                    pk=service.pk
                )
                if service.state == ServiceState.ACTIVE:
                    planned.append(_replan(service, speeds, margin, horizon_s, now))
        except ValidationError as exc:  # one service that cannot be planned must not stop the round
            note = f"Not planned: {' '.join(exc.messages)}"[:300]
            Service.objects.filter(pk=service.pk).update(slo_note=note, updated_at=now)
            logger.warning("service %s: %s", service.pk, note)
    return planned


def _replan(service: Service, speeds: Speeds, margin: float, horizon_s: float, now) -> Service:
    samples = selectors.forecast_samples(service, now=now, horizon_s=horizon_s)
    rate = forecast.forecast_rate(samples, now.timestamp(), horizon_s) if samples else service.expected_rate_rps
    hold = forecast.held_rate(samples, now.timestamp()) if samples else None
    if selectors.newest_p99_report_since(service, service.planned_at):
        _learn(service, speeds)
    plan = _planned(service, speeds, margin, rate, hold)
    _write_plan(service, plan, rate, now)
    replicas = list(selectors.live_replicas(service))
    changed = [job.pk for job in replicas if job.min_throughput != plan.steps_per_s]
    if changed:
        Job.objects.filter(pk__in=changed).update(min_throughput=plan.steps_per_s, updated_at=now)
        live.jobs_changed(changed)
    for _ in range(plan.replicas - len(replicas)):
        _add_replica(service, plan.steps_per_s)
    _remove_surplus(service, replicas, plan, rate, now)
    services_changed([service.pk])
    return service


def calibration_of(service: Service) -> latency.Calibration:
    """What the service's reports taught the model so far (latency.Calibration)."""
    spread = tuple(service.calibration_spread) if len(service.calibration_spread or ()) == 3 else None
    return latency.Calibration(service.calibration, service.speed_factor, *((spread,) if spread else ()))


def _learn(service: Service, speeds: Speeds) -> None:
    """The calibration after the newest reported P99: that of the slowest placed replica at its
    predicted speed where it runs (with its partner), on the rate reported shared evenly over the
    placed replicas. Unchanged without a placed replica."""
    placed = selectors.replica_speeds(service, speeds.predictions)
    if not placed or service.p99_ms is None:
        return
    learnt = calibration_of(service).learnt(
        min(placed), service.request_rate_rps / len(placed), service.batch_size, service.p99_ms
    )
    service.calibration, service.speed_factor, service.calibration_spread = (
        learnt.latency, learnt.speed, list(learnt.spread)
    )


def _planned(service: Service, speeds: Speeds, margin: float, rate: float, hold: float | None = None) -> ReplicaPlan:
    fastest = speeds.fastest(service.workload.name)
    return plan_replicas(
        rate_rps=rate, bound_ms=service.latency_bound_ms, batch_size=service.batch_size,
        min_replicas=service.min_replicas, max_replicas=service.max_replicas,
        best_steps_per_s=fastest[1] if fastest else None, calibration=service.calibration,
        speed_factor=service.speed_factor, margin=margin, cap_steps_per_s=speeds.surest(service.workload.name),
        hold_rps=hold,
    )


def _write_plan(service: Service, plan: ReplicaPlan, rate: float, now) -> None:
    service.forecast_rps = rate
    service.replicas_target = plan.replicas
    service.replica_min_throughput = plan.steps_per_s
    service.slo_note = plan.reason[:300]
    service.planned_at = now
    service.save(update_fields=["forecast_rps", "calibration", "speed_factor", "calibration_spread",
                                "replicas_target", "replica_min_throughput", "slo_note", "planned_at", "updated_at"])


def _add_replica(service: Service, min_throughput: float) -> None:
    """Submit one more replica as its owner; ValidationError when the owner is no longer a
    member of the service's tenant (a replica must not land in another tenant)."""
    if tenant_of(service.owner) != service.tenant:
        raise ValidationError(
            {"owner": [f"{service.owner.get_username()} is no longer a member of {service.tenant.slug}: no replica "
                       "is added; stop the service and create it again as a member."]}
        )
    number = service.replicas.count() + 1
    job_submit(
        owner=service.owner, workload=service.workload, min_throughput=min_throughput, max_gpus=1,
        priority=service.priority, total_steps=None, name=f"{service.name} replica {number}"[:120],
        command=service.command, environment=service.environment, service=service,
    )


def _remove_surplus(service: Service, replicas: list, plan: ReplicaPlan, rate: float, now) -> None:
    """Cancel the replicas beyond the plan: pending ones first (newest first), then the most
    recently started, which have served the least."""
    surplus = len(replicas) - plan.replicas
    if surplus <= 0:
        return
    order = sorted(replicas, key=lambda job: (job.state != JobState.PENDING.value,
                                              -(job.started_at or job.placed_at or job.submitted_at).timestamp()))
    reason = (f"Service {service.pk} ({service.name}) scaled down to {plan.replicas} replica(s): "
              f"{rate:.3g} requests/s forecast need no more.")
    stopped_any = False
    for job in order[:surplus]:
        stopped_any |= job.state != JobState.PENDING.value
        job_transition(job=job, to=JobState.CANCELLED.value, reason=reason[:300], now=now)
        announce("job %s cancelled: %s", job.pk, reason)
    if stopped_any:
        executor_sync_request()
