"""The accounting pass over the database: jobs' energy, tenants' days, where it stopped."""
from datetime import date, timedelta

import pytest

from gogh_web.events.models import Event
from scheduler.accounting.services import accounting_pass
from scheduler.models import Allocation, Job, TenantEnergyDay
from telemetry.models import GpuSampleMinute

from .conftest import T0, allocate, at, samples

KWH = 3.6e6


@pytest.fixture
def tenant_days():
    def read():
        return {(row.tenant.slug, row.day): (row.energy_kwh, row.gpu_hours) for row in TenantEnergyDay.objects.all()}
    return read


def energy(job):
    return Job.objects.get(pk=job.pk).energy_kwh


def test_one_job_alone_draws_its_gpus_measured_energy(gpus, make_job, tenant_days):
    job = make_job()
    allocation = allocate(job, gpus[0], 0, 600)
    samples(gpus[0], 0, 600, 200.0)
    samples(gpus[1], 0, 600, 999.0)  # another GPU: not the job's
    done = accounting_pass(now=at(3600), settle_s=0)
    assert done.allocations == 1
    assert energy(job) == pytest.approx(120_000 / KWH)
    assert tenant_days() == {("research", T0.date()): (pytest.approx(120_000 / KWH), pytest.approx(600 / 3600))}
    assert Allocation.objects.get(pk=allocation.pk).energy_counted_until == at(600)


def test_two_co_located_jobs_split_their_gpu(gpus, make_job):
    first, second = make_job("research"), make_job("vision")
    allocate(first, gpus[0], 0, 600)
    allocate(second, gpus[0], 300, 600)
    samples(gpus[0], 0, 600, 200.0)
    accounting_pass(now=at(3600), settle_s=0)
    assert energy(first) == pytest.approx((200 * 300 + 100 * 300) / KWH)
    assert energy(second) == pytest.approx(100 * 300 / KWH)


def test_an_allocation_across_utc_midnight_counts_on_both_days(gpus, make_job, tenant_days):
    job = make_job()
    midnight = (T0 + timedelta(days=1)).replace(hour=0)
    begin = int((midnight - T0).total_seconds()) - 300
    allocate(job, gpus[0], begin, begin + 600)
    samples(gpus[0], begin, begin + 600, 100.0)
    accounting_pass(now=at(begin + 3600), settle_s=0)
    half = (pytest.approx(30_000 / KWH), pytest.approx(300 / 3600))
    assert tenant_days() == {("research", T0.date()): half, ("research", midnight.date()): half}


def test_a_second_pass_counts_nothing_again_and_an_open_allocation_continues(gpus, make_job, tenant_days):
    job = make_job()
    allocation = allocate(job, gpus[0], 0)
    samples(gpus[0], 0, 1200, 100.0)
    accounting_pass(now=at(600), settle_s=0)
    assert accounting_pass(now=at(600), settle_s=0).allocations == 0
    assert energy(job) == pytest.approx(60_000 / KWH)
    accounting_pass(now=at(1200), settle_s=0)
    assert energy(job) == pytest.approx(120_000 / KWH)
    assert tenant_days()[("research", T0.date())][0] == pytest.approx(120_000 / KWH)
    assert Allocation.objects.get(pk=allocation.pk).energy_counted_until == at(1200)


def test_the_settle_lag_leaves_recent_time_for_a_later_pass(gpus, make_job):
    job = make_job()
    allocation = allocate(job, gpus[0], 0)
    samples(gpus[0], 0, 600, 100.0)
    accounting_pass(now=at(600), settle_s=120)
    assert Allocation.objects.get(pk=allocation.pk).energy_counted_until == at(480)
    assert energy(job) == pytest.approx(48_000 / KWH)


def test_missing_samples_count_nothing_beyond_the_hold(gpus, make_job):
    job = make_job()
    allocate(job, gpus[0], 0, 300)
    samples(gpus[0], 0, 100, 100.0)
    samples(gpus[0], 200, 300, 100.0)
    accounting_pass(now=at(3600), settle_s=0)
    assert energy(job) == pytest.approx(100.0 * (109 + 100) / KWH)  # the last sample before the gap holds 10 s


def test_minute_aggregates_count_where_raw_samples_were_folded(gpus, make_job):
    job = make_job()
    allocate(job, gpus[0], 0, 120)
    GpuSampleMinute.objects.bulk_create(
        GpuSampleMinute(gpu=gpus[0], minute=at(m), samples=60, power_w_mean=150.0) for m in (0, 60)
    )
    accounting_pass(now=at(3600), settle_s=0)
    assert energy(job) == pytest.approx(150.0 * 120 / KWH)


def test_one_pass_counts_at_most_its_span_and_the_next_goes_on(gpus, make_job):
    job = make_job()
    allocation = allocate(job, gpus[0], 0, 600)
    samples(gpus[0], 0, 600, 100.0)
    accounting_pass(now=at(3600), settle_s=0, max_span_s=400)
    assert Allocation.objects.get(pk=allocation.pk).energy_counted_until == at(400)
    accounting_pass(now=at(3600), settle_s=0, max_span_s=400)
    assert energy(job) == pytest.approx(60_000 / KWH)
    assert accounting_pass(now=at(3600), settle_s=0, max_span_s=400).allocations == 0


def test_gpu_hours_are_weighted_by_the_gpus_tdp(k80, gpus, make_job, tenant_days):
    gpus[1].gpu_type = k80  # 150 W: half a V100's hour
    gpus[1].save()
    allocate(make_job(), gpus[1], 0, 3600)
    accounting_pass(now=at(7200), settle_s=0, max_span_s=3600)
    assert tenant_days()[("research", T0.date())] == (0.0, pytest.approx(0.5))


def test_a_closed_allocation_of_no_length_is_marked_done(gpus, make_job):
    allocation = allocate(make_job(), gpus[0], 0, 0)
    assert accounting_pass(now=at(60), settle_s=0).allocations == 0
    assert Allocation.objects.get(pk=allocation.pk).energy_counted_until == at(0)
    assert not TenantEnergyDay.objects.exists()


def test_days_add_up_over_passes(gpus, make_job):
    job = make_job()
    allocate(job, gpus[0], 0)
    samples(gpus[0], 0, 120, 100.0)
    accounting_pass(now=at(60), settle_s=0)
    accounting_pass(now=at(120), settle_s=0)
    row = TenantEnergyDay.objects.get()
    assert (row.day, row.energy_kwh, row.gpu_hours) == (date(2026, 3, 10), pytest.approx(12_000 / KWH),
                                                        pytest.approx(120 / 3600))


def test_a_pass_that_counted_sends_its_tenants_events_and_an_idle_one_sends_none(gpus, make_job,
                                                                                django_capture_on_commit_callbacks):
    """The Tenants page follows the accounting live: the tenant whose energy moved gets an
    event (and the others whose factor moved with it); a pass with nothing new sends nothing."""
    job = make_job("research")
    allocate(job, gpus[0], 0, 600)
    samples(gpus[0], 0, 600, 200.0)
    first = Event.objects.order_by("-id").values_list("id", flat=True).first() or 0
    with django_capture_on_commit_callbacks(execute=True):
        accounting_pass(now=at(3600), settle_s=0)
    sent = list(Event.objects.filter(id__gt=first, kind="tenant").values_list("key", flat=True))
    assert str(job.tenant_id) in sent
    last = Event.objects.order_by("-id").values_list("id", flat=True).first()
    with django_capture_on_commit_callbacks(execute=True):
        accounting_pass(now=at(3600), settle_s=0)
    assert not Event.objects.filter(id__gt=last, kind="tenant").exists()
