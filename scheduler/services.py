"""Writes for the scheduler. Only these functions change a job's state, so every move is
checked against the state machine in scheduler.lifecycle and stamped in one place."""
import hashlib
import json
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from .lifecycle import TERMINAL, JobState, check_transition
from .models import Job
from .selectors import tenant_of

WAITING_FOR_ROUND = "Waiting for the next scheduling round."


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
    deadline=None,
    name: str = "",
    command: str = "",
    environment: dict | None = None,
    idempotency_key: str | None = None,
    fingerprint: str = "",
) -> Submission:
    """Create a pending job in the owner's tenant.

    With an idempotency key, a retry returns the job the first request made (same owner, same
    key, same body); the same key with a different body is refused rather than guessed at.
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
                deadline=deadline,
                name=name,
                command=command,
                environment=environment or {},
                pending_reason=WAITING_FOR_ROUND,
                idempotency_key=idempotency_key or None,
                request_fingerprint=fingerprint if idempotency_key else "",
            )
    except IntegrityError:
        # Two requests with one key raced; the other one committed first.
        existing = _job_for_key(owner=owner, key=idempotency_key, fingerprint=fingerprint) if idempotency_key else None
        if existing is None:
            raise
        return Submission(job=existing, created=False)
    return Submission(job=job, created=True)


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
    target = JobState(to)
    with transaction.atomic():
        job = Job.objects.select_for_update().get(pk=job.pk)
        check_transition(job.state, target.value)
        if target is JobState.PENDING and not reason:
            raise ValidationError({"reason": "A job that returns to pending needs a reason."})
        job.state = target.value
        job.state_reason = reason
        job.pending_reason = reason if target is JobState.PENDING else ""
        if target is JobState.PLACED:
            job.placed_at = now
        elif target is JobState.RUNNING:
            job.started_at = now
        if target in TERMINAL:
            job.finished_at = now
        if target in TERMINAL or target is JobState.PENDING:
            job.allocations.filter(end__isnull=True).update(end=now)
        job.save()
    return job


def job_cancel(*, job: Job, by, reason: str = "") -> Job:
    """Cancel a job that has not ended; raises lifecycle.IllegalTransition for one that has."""
    return job_transition(job=job, to=JobState.CANCELLED.value, reason=reason or f"Cancelled by {by.get_username()}.")
