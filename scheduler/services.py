"""Writes for the scheduler. Only these functions change a job's state, so every move is
checked against the state machine in scheduler.lifecycle and stamped in one place."""
import hashlib
import json
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from catalog.models import PredictionRecord, PredictorStatus, PredictorVersion
from catalog.services.predictors import NoActivePredictor, prediction_create
from gogh_web.activity import announce, gpus_where
from gogh_web.outbox.services import outbox_acknowledge, outbox_enqueue
from telemetry.models import Gpu, GpuState, NodeState

from . import exploration_round, live, optimizer
from .cell_runner import solve_cells
from .interruptions import interruption_row, interruptions_record, move_reason, preemption_cause
from .lifecycle import TERMINAL, IllegalTransition, JobState, check_transition
from .models import (
    Allocation,
    InterruptionKind,
    Job,
    JobInterruption,
    SolveRun,
    SolveStatus,
    SolveTrigger,
    SolverConfig,
    SolverConfigChange,
)
from .optimizer.ilp import IlpSolver
from .optimizer.limit_levels import planned_speeds
from .optimizer.serialization import plan_to_dict, problem_from_dict
from .problem_source import problem_from_database
from .selectors import tenant_of

WAITING_FOR_ROUND = "Waiting for the next scheduling round."
SHADOW_REASON = "Shadow mode: not dispatched; the solve runs record where it would run (decision)."
#: Outbox keys (gogh_web.outbox): one round request outstanding at a time, one P1 per job.
ROUND_KEY = "scheduler.round"
ROUND_TASK = "scheduler.tasks.scheduling_round"
P1_TASK = "scheduler.tasks.job_predict"
#: A pushing executor's sync (scheduler.dispatch.executor_sync), asked for after a change it must push.
EXECUTOR_SYNC_KEY = "scheduler.executor_sync"
EXECUTOR_SYNC_TASK = "scheduler.tasks.executor_sync"


def p1_key(job_id: int) -> str:
    return f"scheduler.p1:{job_id}"


@dataclass(frozen=True)
class Submission:
    job: Job
    created: bool


def request_fingerprint(payload: dict) -> str:
    """A stable digest of a submission, to tell a retry from a different request with a reused key."""
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def job_submit(
    *,
    owner,
    workload,
    min_throughput: float,
    max_gpus: int,
    priority: int = 0,
    total_steps: int | None = None,
    memory_gb: float | None = None,
    deadline=None,
    preemption_grace_s: int = 60,
    name: str = "",
    command: str = "",
    environment: dict | None = None,
    idempotency_key: str | None = None,
    fingerprint: str = "",
    service=None,
) -> Submission:
    """Create a pending job in the owner's tenant.

    With an idempotency key, a retry returns the job the first request made (same owner, same
    key, same body); the same key with a different body is refused rather than guessed at.
    A service's replicas are submitted here too, with `service` set (scheduler.serving).
    """
    tenant = tenant_of(owner)
    if tenant is None:
        raise ValidationError({"tenant": "Your account belongs to no tenant; ask an administrator to add you to one."})
    if idempotency_key:
        existing = _job_for_key(owner=owner, key=idempotency_key, fingerprint=fingerprint)
        if existing is not None:
            return Submission(job=existing, created=False)
    try:
        with transaction.atomic():
            job = Job.objects.create(
                owner=owner,
                tenant=tenant,
                workload=workload,
                min_throughput=min_throughput,
                max_gpus=max_gpus,
                priority=priority,
                total_steps=total_steps,
                memory_gb=memory_gb,
                deadline=deadline,
                preemption_grace_s=preemption_grace_s,
                name=name,
                command=command,
                environment=environment or {},
                pending_reason=WAITING_FOR_ROUND,
                idempotency_key=idempotency_key or None,
                request_fingerprint=fingerprint if idempotency_key else "",
                service=service,
            )
            live.job_changed(job)
            scheduling_round_request(trigger=SolveTrigger.SUBMIT)
            _send_prediction(job.pk)
            announce(
                "job %s submitted by %s (tenant %s): %s, T_min %g steps/s, at most %s GPU(s), %s", job.pk,
                owner.get_username(), tenant.slug, workload.name, min_throughput, max_gpus,
                f"{total_steps} steps" if total_steps else "steps not given",
            )
    except IntegrityError:
        # Two requests with one key raced; the other one committed first.
        existing = _job_for_key(owner=owner, key=idempotency_key, fingerprint=fingerprint) if idempotency_key else None
        if existing is None:
            raise
        return Submission(job=existing, created=False)
    return Submission(job=job, created=True)


def _send_prediction(job_id: int) -> bool:
    """Ask P1 for a job through the outbox (sent once the transaction commits, kept until
    job_predict acknowledges it); False while a request for that job is still outstanding."""
    return outbox_enqueue(task=P1_TASK, args=[job_id], key=p1_key(job_id), until_acknowledged=True) is not None


def job_predict(*, job: Job) -> PredictionRecord | None:
    """P1's estimates for a submitted job, stored for the rounds to plan with where the catalog
    measured nothing (a new workload, GPU types or partners it never met). With no trained
    predictor yet, rounds plan from measurements alone and this returns None. A job still
    pending gets a round, since it may be placeable now. The request may arrive twice (the
    outbox sends again what it never saw acknowledged): a job that has a prediction keeps it."""
    record = PredictionRecord.objects.filter(job_id=job.pk).first()
    created = False
    if record is None:
        try:
            record = prediction_create(workload=job.workload, job_id=job.pk, shadow=SolverConfig.load().shadow_mode)
            created = True
        except NoActivePredictor:
            pass
    with transaction.atomic():
        if created and Job.objects.filter(pk=job.pk, state=JobState.PENDING.value).exists():
            scheduling_round_request(trigger=SolveTrigger.PREDICTION)
        outbox_acknowledge(key=p1_key(job.pk))
    return record


def job_predict_by_id(*, job_id: int) -> PredictionRecord | None:
    """job_predict for the job `job_id`, as its Celery task asks. A job deleted since it was
    submitted (an operator removed it) has nothing to predict: its request is acknowledged, or
    the outbox would send it again every GOGH_OUTBOX_REDELIVER_S for ever."""
    job = Job.objects.select_related("workload").filter(pk=job_id).first()
    if job is None:
        outbox_acknowledge(key=p1_key(job_id))
        return None
    return job_predict(job=job)


def predictions_reconcile() -> int:
    """Ask P1, through the outbox, for every job not yet ended that has no prediction while a
    predictor is active: submitted before any predictor was trained, or whose request was lost.
    Once per job: while its request is outstanding (not yet acknowledged by job_predict) none
    is added, however often this runs. How many were asked for."""
    if not PredictorVersion.objects.filter(status=PredictorStatus.ACTIVE).exists():
        return 0
    unpredicted = (
        Job.objects.exclude(state__in=[state.value for state in TERMINAL])
        .exclude(Exists(PredictionRecord.objects.filter(job_id=OuterRef("pk"))))
        .values_list("pk", flat=True)
    )
    with transaction.atomic():
        return sum(_send_prediction(job_id) for job_id in unpredicted)


def _job_for_key(*, owner, key: str, fingerprint: str) -> Job | None:
    job = Job.objects.filter(owner=owner, idempotency_key=key).first()
    if job is not None and job.request_fingerprint != fingerprint:
        raise ValidationError(
            {"idempotency_key": f"Key {key!r} was already used for a different submission (job {job.pk})."}
        )
    return job


def job_transition(*, job: Job, to: str, reason: str = "", now=None) -> Job:
    """Move a job to another state, if the state machine allows it, stamping its timestamps.

    A job that goes back to pending must say why (the database refuses it otherwise); a job
    that ends has its open allocations closed at the same instant.
    """
    now = now or timezone.now()
    with transaction.atomic():
        job = Job.objects.select_for_update().get(pk=job.pk)
        if _stamp_transition(job, to, reason, now):
            job.allocations.filter(end__isnull=True).update(end=now)
        job.save()
        live.job_changed(job)
        _campaign_job_ended(job, now)
    return job


def _campaign_job_ended(job: Job, now) -> None:
    """A profiling campaign's job that ends settles its cases left without a result (scheduler.profiling)."""
    if job.campaign_id is not None and job.is_terminal:
        from .profiling.services import campaign_job_ended  # it submits its jobs through this module

        campaign_job_ended(job=job, now=now)


def _stamp_transition(job: Job, to: str, reason: str, now) -> bool:
    """job_transition's checks and stamps on the (locked) job in memory, for the caller to save:
    whether the move ends the job's open allocations (it ends or goes back to pending)."""
    target = JobState(to)
    check_transition(job.state, target.value)
    if target is JobState.PENDING and not reason:
        raise ValidationError({"reason": "A job that returns to pending needs a reason."})
    job.state = target.value
    job.state_reason = reason
    job.pending_reason = reason if target is JobState.PENDING else ""
    job.updated_at = now
    if target is JobState.PLACED:
        job.placed_at = now
    elif target is JobState.RUNNING:
        job.started_at = now
        job.handover_until = None  # its next run started: the last one's stop is no longer awaited
    if target in TERMINAL:
        job.finished_at = now
    if target in TERMINAL or target is JobState.PENDING:
        job.probe_gpu_type, job.probe_until = "", None  # a probe ends when its job leaves its GPUs
    return target in TERMINAL or target is JobState.PENDING


def job_cancel(*, job: Job, by, reason: str = "") -> Job:
    """Cancel a job that has not ended; raises lifecycle.IllegalTransition for one that has.
    The state reason names who cancelled it, and why when they said."""
    said = f" {reason.strip()}" if reason.strip() else ""
    job = job_transition(job=job, to=JobState.CANCELLED.value, reason=f"Cancelled by {by.get_username()}.{said}")
    scheduling_round_request(trigger=SolveTrigger.CANCEL)
    executor_sync_request()
    announce("job %s cancelled: %s", job.pk, job.state_reason)
    return job


def scheduling_round_request(*, trigger: str) -> None:
    """Ask for a scheduling round once the current transaction commits, debounced: a burst of
    requests leads to one round, run by a worker GOGH_ROUND_DEBOUNCE_S seconds (default 2)
    after the first of them. The request is held until that round starts (scheduling_round_started),
    however long the rounds queue makes it wait, so at most one is pending; one made while a
    round runs leads to exactly one more. A broker that cannot be reached keeps the request in
    the outbox until it is back."""
    _send_round(trigger)


def _send_round(trigger: str) -> None:
    outbox_enqueue(task=ROUND_TASK, kwargs={"trigger": trigger}, key=ROUND_KEY,
                   countdown=settings.GOGH_ROUND_DEBOUNCE_S, until_acknowledged=True)


def executor_sync_request() -> None:
    """With a pushing executor (GOGH_EXECUTOR=slurm), a sync once the current transaction
    commits, so that a decision or a cancel reaches the executor now rather than at the next
    periodic sync. Requests made before the message is sent fold into one; one lost costs at
    most GOGH_SLURM["sync_s"]."""
    from .dispatch.executor_settings import executor_pushes  # dispatch builds on these services

    if executor_pushes():
        outbox_enqueue(task=EXECUTOR_SYNC_TASK, key=EXECUTOR_SYNC_KEY)


def scheduling_round_started() -> None:
    """A round task started (requested or periodic): it will see every change committed so
    far, so the pending request is done and the next one is sent again."""
    outbox_acknowledge(key=ROUND_KEY)


@dataclass(frozen=True)
class JobNews:
    """What a round did to one job, for the activity log: kind is placed, moved, preempted or
    pending; detail the predicted steps/s (placed, moved) or the reason (preempted, pending)."""

    kind: str
    job_id: int
    before: tuple[int, ...]  # GPU ids it held
    after: tuple[int, ...]  # GPU ids it holds now
    detail: float | str


@dataclass(frozen=True)
class RoundResult:
    solve_run: SolveRun
    allocation: optimizer.Plan


def scheduling_round_run(*, trigger: str, dry_run: bool = False, solver: str | None = None) -> RoundResult:
    """One scheduling round: build the problem from the database, solve it, and (unless a dry
    run) apply the decision in one transaction: allocations opened and closed, jobs moved
    through the state machine, pending jobs given the solver's reason, and a SolveRun that
    records how the decision was reached. A dry run records its SolveRun and changes nothing else.
    Before the problem is built, every inference service is planned (scheduler.serving.services:
    its replicas' T_min follow its traffic, replicas are added or removed), except in a dry run.
    """
    if not dry_run:
        from .serving.services import services_plan  # it submits and cancels replicas through this module

        services_plan()
    config = SolverConfig.load()
    snapshot_at = timezone.now()
    problem, exploration = exploration_round.round_exploration(
        problem_from_database(config, solver=solver), now=snapshot_at
    )
    allocation = optimizer.get_solver(problem.settings.solver, run_cells=solve_cells).solve(problem)
    allocation = exploration_round.explained(allocation, exploration, problem)
    now = timezone.now()
    with transaction.atomic():
        SolverConfig.objects.select_for_update().get(pk=config.pk)  # one round applies at a time
        # Rounds solve outside the lock, so two can overlap. A decision taken on a snapshot that
        # another round has since changed could overfill a GPU, and one that uses a node gone
        # down since would strand jobs: it is recorded but not applied, and a fresh round is
        # asked for. (Capacity freed since the snapshot is harmless: the next round uses it.)
        shadow = config.shadow_mode and not dry_run
        superseded = not dry_run and not shadow and _decision_is_stale(allocation, snapshot_at)
        run = SolveRun.objects.create(
            trigger=trigger,
            solver=allocation.solver,
            status=SolveStatus.SUPERSEDED if superseded else allocation.status,
            dry_run=dry_run,
            objective=allocation.objective,
            gap=allocation.gap,
            duration_s=allocation.seconds,
            num_jobs=len(problem.jobs),
            num_gpus=len(problem.gpus),
            num_variables=allocation.variables,
            num_constraints=allocation.constraints,
            fallback_reason=allocation.fallback_reason[:300],
            power_w=allocation.power_w,
            num_placed=len(allocation.placements),
            load=allocation.load,
            energy_weight=allocation.energy_weight,
            notes="\n".join(allocation.notes),
            finished_at=now,
            shadow=shadow,
            decision=_decision(allocation) | exploration.decision(),
        )
        live.solve_run_changed(run)
        if superseded:
            scheduling_round_request(trigger=trigger)
            announce("round %s superseded: the cluster changed while it solved; another round is asked for", run.pk)
        elif shadow:
            would_run = Job.objects.filter(
                pk__in=[int(job_id) for job_id in allocation.placements], state=JobState.PENDING.value
            ).exclude(pending_reason=SHADOW_REASON)
            changed = list(would_run.values_list("pk", flat=True))
            Job.objects.filter(pk__in=changed).update(pending_reason=SHADOW_REASON)
            live.jobs_changed(changed)
        elif not dry_run:
            news = _apply(allocation, run, now, exploration, speeds=planned_speeds(allocation, problem))
            if news:
                _announce_round(run, allocation, news)
    return RoundResult(solve_run=run, allocation=allocation)


def _announce_round(run: SolveRun, allocation: optimizer.Plan, news: list[JobNews]) -> None:
    """The activity log of a round that changed something: its summary, then one line per job
    it placed, moved, preempted or gave a new pending reason. A round that changes nothing says
    nothing: beat starts one every 30 s."""
    announce(
        "round %s (%s): %s placed, %s pending; %s %s in %.2f s", run.pk, run.trigger, len(allocation.placements),
        len(allocation.reasons), allocation.solver, allocation.status, allocation.seconds,
    )
    gpu_ids = {gpu_id for item in news for gpu_id in item.before + item.after}
    gpus = Gpu.objects.select_related("node", "gpu_type").in_bulk(gpu_ids)
    for item in news:
        before = gpus_where(gpus[gpu_id] for gpu_id in item.before if gpu_id in gpus)
        after = gpus_where(gpus[gpu_id] for gpu_id in item.after if gpu_id in gpus)
        if item.kind == "placed":
            announce("job %s placed on %s, predicted %.3g steps/s", item.job_id, after, item.detail)
        elif item.kind == "moved":
            announce("job %s moved from %s to %s, predicted %.3g steps/s", item.job_id, before, after, item.detail)
        elif item.kind == "preempted":
            announce("job %s preempted from %s: %s", item.job_id, before, item.detail)
        else:
            announce("job %s pending: %s", item.job_id, item.detail)


def _decision(allocation: optimizer.Plan) -> dict:
    """What the solver decided, kept with its SolveRun whether applied, superseded, dry or shadow."""
    return {
        "placements": {
            job_id: {
                "gpu_ids": list(p.gpu_ids), "partners": list(p.partners),
                "predicted_throughput": p.predicted_throughput, "predicted_power_w": p.predicted_power_w,
            }
            for job_id, p in allocation.placements.items()
        },
        "reasons": dict(allocation.reasons),
    }


def _decision_is_stale(allocation: optimizer.Plan, snapshot_at) -> bool:
    if Allocation.objects.filter(start__gte=snapshot_at).exists():
        return True
    gpu_ids = {int(gpu_id) for placement in allocation.placements.values() for gpu_id in placement.gpu_ids}
    usable = Gpu.objects.filter(
        pk__in=gpu_ids, state=GpuState.HEALTHY, node__state=NodeState.READY, node__approved_at__isnull=False,
        external_holder="",  # a run submitted straight to Slurm took it while the round solved
    ).count()
    return usable != len(gpu_ids)


def _apply(allocation: optimizer.Plan, run: SolveRun, now,
           exploration: exploration_round.RoundExploration | None = None, *,
           speeds: dict[str, float] | None = None) -> list[JobNews]:
    """Apply a decision inside the round's transaction in a few queries, however many jobs it
    places (one more per distinct reason it writes): its jobs locked and read in one query
    (every move is checked by scheduler.lifecycle on the locked row, so a job that ended while
    the round was solving is left alone), then _RoundWrites, then the interruptions of the jobs
    it preempted or moved, all in one insert (scheduler.interruptions). One transition and one
    batch of live events per job made a round placing 236 jobs take 89 s, three quarters of it
    storing events one job at a time. The probe fields change in the same writes
    (exploration_round.probe_fields; _stamp_transition ends a probe whose job goes back to
    pending): a probe starts only if its job is placed, and a job whose probe ended and that no
    longer meets its T_min is preempted with what the probe measured.

    Returns what it did to each job, for the activity log."""
    ids = sorted(int(job_id) for job_id in {*allocation.placements, *allocation.reasons})
    jobs = {str(job.pk): job for job in Job.objects.select_for_update().filter(pk__in=ids).order_by("pk")}
    open_allocs, held_power, held_limit = _open_allocations_of(jobs.values())
    newcomers = [(jobs[job_id], {int(g) for g in placement.gpu_ids})
                 for job_id, placement in allocation.placements.items() if jobs[job_id].state == JobState.PENDING.value]
    writes = _RoundWrites(now, speeds or {})
    exploration = exploration or exploration_round.RoundExploration()
    stops, moves, news = [], [], []
    for job_id, reason in allocation.reasons.items():
        job = jobs[job_id]
        held = tuple(sorted(gpu_id for gpu_id, _ in open_allocs.get(job.pk, ())))
        try:
            if job.state != JobState.PENDING.value:
                cause = reason if job_id in exploration.ended else preemption_cause(job, held, reason, newcomers)
                why = f"Preempted by solve {run.pk}: {cause}"
                stop = interruption_row(job, kind=InterruptionKind.PREEMPTED, reason=why, now=now, solve_run=run)
                writes.move(job, JobState.PENDING.value, why[:300])
                stops.append(stop)
                news.append(JobNews("preempted", job.pk, held, (), reason))
            elif job.pending_reason != reason[:300]:
                job.pending_reason = reason[:300]
                writes.save(job, "pending_reason")
                news.append(JobNews("pending", job.pk, (), (), reason))
        except IllegalTransition:
            continue  # the job ended while the round was solving
    for job_id, placement in allocation.placements.items():
        job = jobs[job_id]
        if not job.is_terminal:
            _stamp_probe(writes, job, exploration_round.probe_fields(job, exploration, now=now))
        partners = frozenset(int(p) for p in placement.partners)
        wanted = {(int(g), partners) for g in placement.gpu_ids}
        if open_allocs.get(job.pk) == wanted:
            if held_limit.get(job.pk) != placement.power_limit_w:
                writes.change_limit(job, placement)
            continue  # stays where it is
        if job.state in (JobState.PLACED.value, JobState.RUNNING.value) and (
            {g for g, _ in open_allocs.get(job.pk, ())} == {g for g, _ in wanted}
        ):
            writes.change_partners(job, placement, partners)
            continue
        held = tuple(sorted(gpu_id for gpu_id, _ in open_allocs.get(job.pk, ())))
        try:
            moved = job.state != JobState.PENDING.value
            if moved:
                stop = interruption_row(job, kind=InterruptionKind.MOVED, reason="", now=now, solve_run=run)
                probing = job.probe_gpu_type, job.probe_until
                writes.move(job, JobState.PENDING.value, f"Migrated by solve {run.pk}.")
                job.probe_gpu_type, job.probe_until = probing  # a move does not end its probe
                moves.append((stop, placement, held_power.get(job.pk)))
            probe = exploration.probes.get(job_id) if job.probe_gpu_type else None  # one starting now
            why = exploration_round.probe_reason(probe, job.min_throughput) if probe else f"Placed by solve {run.pk}."
            writes.move(job, JobState.PLACED.value, why[:300])
        except IllegalTransition:
            continue
        writes.open(job, placement, partners)
        news.append(JobNews("moved" if moved else "placed", job.pk, held,
                            tuple(sorted(int(g) for g in placement.gpu_ids)), placement.predicted_throughput))
    writes.write(run)
    interruptions_record(stops + _moves_explained(moves, run), now=now, handover=True)
    if any(item.kind != "pending" for item in news) or writes.limits:
        executor_sync_request()  # allocations opened, closed or given a new limit: a pushing executor hears of it now
    return news


def _stamp_probe(writes: "_RoundWrites", job: Job, fields: dict) -> None:
    for name, value in fields.items():
        setattr(job, name, value)
    if fields:
        writes.save(job, *fields)


def _moves_explained(moves: list[tuple[JobInterruption, object, float | None]], run: SolveRun) -> list:
    """The interruption rows of the jobs a round moved, each with its reason: where to, and the
    power predicted there against what its old GPUs were predicted to draw (one query for all)."""
    gpu_ids = {int(gpu_id) for _, placement, _ in moves for gpu_id in placement.gpu_ids}
    gpus = Gpu.objects.select_related("node", "gpu_type").in_bulk(gpu_ids) if moves else {}
    for stop, placement, before_w in moves:
        where = gpus_where(gpus[int(gpu_id)] for gpu_id in placement.gpu_ids if int(gpu_id) in gpus)
        stop.reason = move_reason(run.pk, where, before_w=before_w, after_w=placement.predicted_power_w)[:300]
    return [stop for stop, _, _ in moves]


def _open_allocations_of(jobs) -> tuple[dict[int, set[tuple[int, frozenset[int]]]], dict[int, float | None],
                                         dict[int, float | None]]:
    """Each job's open allocations as (GPU id, the ids of the jobs sharing that GPU), the
    power they were predicted to draw together (None where one did not say) and the power
    limit set on them (None: the default), in two queries (the rows, then their partners)."""
    jobs = list(jobs)
    rows = Allocation.objects.filter(end__isnull=True, job__in=jobs).values_list(
        "pk", "job_id", "gpu_id", "predicted_power_w", "power_limit_w"
    )
    partners: dict[int, set[int]] = {}
    for allocation_id, partner_id in Allocation.partners.through.objects.filter(
        allocation__end__isnull=True, allocation__job__in=jobs
    ).values_list("allocation_id", "job_id"):
        partners.setdefault(allocation_id, set()).add(partner_id)
    open_allocs: dict[int, set[tuple[int, frozenset[int]]]] = {}
    power: dict[int, float | None] = {}
    limit: dict[int, float | None] = {}
    for pk, job_id, gpu_id, power_w, limit_w in rows:
        open_allocs.setdefault(job_id, set()).add((gpu_id, frozenset(partners.get(pk, ()))))
        known = power.get(job_id, 0.0)
        power[job_id] = None if known is None or power_w is None else known + power_w
        limit[job_id] = limit_w
    return open_allocs, power, limit


class _RoundWrites:
    """What a decision changes, gathered job by job, then written in a few statements: the open
    allocations of the jobs that move closed in one update, the jobs in one update per distinct
    set of new values (one for all the jobs a round places: Django's bulk_update spent 6 s
    building the CASE expressions of 500 jobs), the new allocations and their partner links in
    two inserts, and one batch of events for every job that changed."""

    JOB_FIELDS = ("state", "state_reason", "pending_reason", "placed_at", "started_at", "finished_at", "updated_at",
                  "probe_gpu_type", "probe_until")

    def __init__(self, now, speeds: dict[str, float]):
        self.now = now
        self.speeds = speeds  # job id -> planned speed under its limit (optimizer.limit_levels.planned_speeds)
        self.jobs: dict[int, Job] = {}  # to save
        self.fields: dict[int, set[str]] = {}  # the fields of each that changed
        self.closing: set[int] = set()  # jobs whose open allocations end
        self.opening: list[tuple[Job, object, frozenset[int]]] = []  # (job, placement, partner ids)
        self.limits: list[tuple[Job, object]] = []  # (job, placement) whose power limit alone changes
        self.changed: set[int] = set()  # jobs whose pages must hear of it

    def save(self, job: Job, *fields: str) -> None:
        self.jobs[job.pk] = job
        self.fields.setdefault(job.pk, set()).update(fields)
        self.changed.add(job.pk)

    def move(self, job: Job, to: str, reason: str) -> None:
        """job_transition for a locked job of the round (raises lifecycle.IllegalTransition)."""
        before = {field: getattr(job, field) for field in self.JOB_FIELDS}
        if _stamp_transition(job, to, reason, self.now):
            self.closing.add(job.pk)
        self.save(job, *(field for field, value in before.items() if getattr(job, field) != value))

    def open(self, job: Job, placement, partners: frozenset[int]) -> None:
        self.opening.append((job, placement, partners))

    def change_partners(self, job: Job, placement, partners: frozenset[int]) -> None:
        """The job keeps its GPUs and only its partners change (a partner ended or moved, or a
        job joins its GPU): not a migration. It keeps its state and keeps running; the allocation
        rows are closed and reopened at `now`, so the history says when it shared with whom.
        (Treating it as a migration restarted a running job whenever its partner finished, as
        seen in the device check: the agent restarted a job whose allocations changed, though
        its GPUs had not.)"""
        self.closing.add(job.pk)
        self.open(job, placement, partners)
        self.changed.add(job.pk)

    def change_limit(self, job: Job, placement) -> None:
        """The job keeps its GPUs and partners and only their power limit changes: not a
        migration and no new allocation. The agent sets the new limit live (NVML changes it
        while the job runs), so the open rows are updated in place, with the throughput and
        power predicted at the new limit."""
        self.limits.append((job, placement))
        self.changed.add(job.pk)

    def write(self, run: SolveRun) -> None:
        Allocation.objects.filter(job_id__in=sorted(self.closing), end__isnull=True).update(end=self.now)
        for (limit, speed, throughput, power), job_ids in self._limit_updates().items():
            Allocation.objects.filter(job_id__in=job_ids, end__isnull=True).update(
                power_limit_w=limit, power_limit_speed=speed, predicted_throughput=throughput, predicted_power_w=power,
            )
        for values, job_ids in self._job_updates().items():
            Job.objects.filter(pk__in=job_ids).update(**dict(values))
        _open_allocations(self.opening, run, self.now, self.speeds)
        live.jobs_changed(self.changed)

    def _limit_updates(self) -> dict[tuple, list[int]]:
        """{(limit, planned speed, throughput, power per GPU): ids of the jobs whose open rows get
        exactly these}: one update per distinct set (jobs of one workload and configuration share one)."""
        updates: dict[tuple, list[int]] = {}
        for job, placement in self.limits:
            values = (placement.power_limit_w, self.speeds.get(placement.job_id), placement.predicted_throughput,
                      placement.predicted_power_w / placement.num_gpus)
            updates.setdefault(values, []).append(job.pk)
        return updates

    def _job_updates(self) -> dict[tuple, list[int]]:
        """{((field, new value), ...): ids of the jobs that get exactly these}."""
        updates: dict[tuple, list[int]] = {}
        for pk, job in sorted(self.jobs.items()):
            values = tuple((field, getattr(job, field)) for field in sorted(self.fields[pk]))
            if values:
                updates.setdefault(values, []).append(pk)
        return updates


def _open_allocations(openings: list[tuple[Job, object, frozenset[int]]], run: SolveRun, now,
                      speeds: dict[str, float]) -> None:
    """For each (job, placement, partner ids): one row per GPU, all in one insert, then all their
    partner links in another (bulk_create returns the rows' ids on PostgreSQL and on SQLite 3.35+)."""
    rows = [
        (Allocation(
            job=job,
            gpu_id=int(gpu_id),
            solve_run=run,
            start=now,
            predicted_throughput=placement.predicted_throughput,
            predicted_power_w=placement.predicted_power_w / placement.num_gpus,
            power_limit_w=placement.power_limit_w,
            power_limit_speed=speeds.get(placement.job_id),
        ), partners)
        for job, placement, partners in openings
        for gpu_id in placement.gpu_ids
    ]
    Allocation.objects.bulk_create([row for row, _ in rows])
    Allocation.partners.through.objects.bulk_create(
        Allocation.partners.through(allocation_id=row.pk, job_id=partner)
        for row, partners in rows for partner in sorted(partners)
    )


def cell_solve(*, problem: dict) -> dict:
    """Solve one cell sent by scheduler.cell_runner (plain dicts in and out; no database)."""
    allocation = IlpSolver().solve(problem_from_dict(problem))
    return plan_to_dict(allocation)


def solver_config_update(*, by, values: dict) -> SolverConfig:
    """Change solver settings, recording every changed field (old and new value, who, when)."""
    with transaction.atomic():
        config = SolverConfig.objects.select_for_update().get(pk=SolverConfig.load().pk)
        for field, value in values.items():
            old = getattr(config, field)
            if old == value:
                continue
            setattr(config, field, value)
            SolverConfigChange.objects.create(
                config=config, changed_by=by, field=field, old_value=str(old)[:200], new_value=str(value)[:200]
            )
        config.full_clean()
        config.save()
        live.solver_config_changed(config)
    return config
