"""The Celery task: beat runs it on the maintenance queue, and it is the pass."""
import pytest
from django.utils import timezone

from gogh_web.celery import app
from gogh_web.celery_config import MAINTENANCE
from scheduler import tasks
from scheduler.models import Allocation, Job, TenantUsage

from .conftest import T0, allocate, samples


def test_beat_runs_the_pass_every_interval_on_the_maintenance_queue(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["accounting-pass"]
    assert entry["task"] == "scheduler.tasks.accounting_pass"
    assert entry["schedule"] == settings.GOGH_ACCOUNTING_EVERY_S == 60.0
    assert entry["options"]["expires"] == settings.GOGH_ACCOUNTING_EVERY_S
    assert app.amqp.router.route({}, entry["task"], (), {})["queue"].name == MAINTENANCE


def test_the_task_counts_what_the_settle_lag_allows(settings, gpus, make_job):
    settings.GOGH_ACCOUNTING_SETTLE_S = 0.0
    job = make_job()
    now = timezone.now().replace(microsecond=0)
    offset = int((now - T0).total_seconds())
    allocation = allocate(job, gpus[0], offset - 60, offset - 30)
    samples(gpus[0], offset - 60, offset - 30, 100.0)
    assert tasks.accounting_pass.apply().get() == 1
    assert Job.objects.get(pk=job.pk).energy_kwh == pytest.approx(3000 / 3.6e6)
    assert Allocation.objects.get(pk=allocation.pk).energy_counted_until == allocation.end
    assert TenantUsage.objects.get(tenant=job.tenant).factor == pytest.approx(0.5)
