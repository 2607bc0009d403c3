"""Job services: timestamps, reasons, allocation closing and the database's own guards."""
import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from scheduler import services
from scheduler.lifecycle import IllegalTransition
from scheduler.models import Allocation, Job


@pytest.fixture
def job(alice, resnet50):
    return services.job_submit(owner=alice, workload=resnet50, min_throughput=5, max_gpus=1).job


def test_submitted_job_is_pending_with_a_reason(job, alice):
    assert job.state == "pending"
    assert job.pending_reason == services.WAITING_FOR_ROUND
    assert job.tenant == alice.membership.tenant


def test_user_without_tenant_cannot_submit(make_user, resnet50):
    loner = make_user("loner")
    with pytest.raises(ValidationError) as err:
        services.job_submit(owner=loner, workload=resnet50, min_throughput=5, max_gpus=1)
    assert "tenant" in err.value.message_dict


def test_full_life_stamps_every_timestamp(job):
    services.job_transition(job=job, to="placed", reason="round 1")
    services.job_transition(job=job, to="running")
    done = services.job_transition(job=job, to="succeeded")
    assert done.placed_at and done.started_at and done.finished_at
    assert done.placed_at <= done.started_at <= done.finished_at
    assert done.pending_reason == ""


def test_illegal_transition_changes_nothing(job):
    with pytest.raises(IllegalTransition):
        services.job_transition(job=job, to="running")
    job.refresh_from_db()
    assert job.state == "pending" and job.started_at is None


def test_back_to_pending_requires_a_reason(job):
    services.job_transition(job=job, to="placed")
    with pytest.raises(ValidationError):
        services.job_transition(job=job, to="pending")
    requeued = services.job_transition(job=job, to="pending", reason="Node v100-a went down.")
    assert requeued.pending_reason == "Node v100-a went down."


def test_cancel_closes_open_allocations(job, cluster, alice):
    services.job_transition(job=job, to="placed")
    Allocation.objects.create(job=job, gpu=cluster[0], start=timezone.now())
    cancelled = services.job_cancel(job=job, by=alice)
    assert cancelled.state == "cancelled"
    assert cancelled.allocations.get().end == cancelled.finished_at
    with pytest.raises(IllegalTransition):
        services.job_cancel(job=cancelled, by=alice)


def test_database_refuses_a_pending_job_without_reason(job):
    with pytest.raises(IntegrityError), transaction.atomic():
        Job.objects.filter(pk=job.pk).update(pending_reason="")


def test_database_refuses_two_open_allocations_on_one_gpu(job, cluster):
    Allocation.objects.create(job=job, gpu=cluster[0], start=timezone.now())
    with pytest.raises(IntegrityError), transaction.atomic():
        Allocation.objects.create(job=job, gpu=cluster[0], start=timezone.now())


def test_reused_key_with_other_body_is_refused(alice, resnet50):
    first = services.job_submit(
        owner=alice, workload=resnet50, min_throughput=5, max_gpus=1, idempotency_key="k", fingerprint="a"
    )
    again = services.job_submit(
        owner=alice, workload=resnet50, min_throughput=5, max_gpus=1, idempotency_key="k", fingerprint="a"
    )
    assert again.job == first.job and not again.created
    with pytest.raises(ValidationError):
        services.job_submit(
            owner=alice, workload=resnet50, min_throughput=6, max_gpus=1, idempotency_key="k", fingerprint="b"
        )
    assert Job.objects.count() == 1
