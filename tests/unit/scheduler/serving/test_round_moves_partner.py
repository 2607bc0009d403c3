"""End to end through the database: a replica and a training job share a V100; while the
traffic is low a round keeps them together, and after it rises the next round moves the
training job away and leaves the replica running on its GPU."""
from datetime import timedelta

import pytest
from django.utils import timezone

from catalog.models import Measurement
from scheduler.lifecycle import JobState
from scheduler.models import Allocation, Job, ServiceTraffic
from scheduler.services import job_submit, job_transition, scheduling_round_run
from scheduler.serving.services import service_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def shared_v100(alice, measured, resnet50, lm, v100, k80):
    """ResNet-50 (served) and LM (trained) each at 10 steps/s alone on a V100 (4 on a K80), 5
    beside each other; the replica and the training job share V100 0, started two hours ago."""
    for workload, partner in ((resnet50, lm), (lm, resnet50)):
        Measurement.objects.create(workload=workload, gpu_type=v100, num_gpus=1, throughput=5.0, partner=partner,
                                   source="reference", observed_at=timezone.now())
    for gpu_type, tau in ((v100, 10.0), (k80, 4.0)):
        Measurement.objects.create(workload=lm, gpu_type=gpu_type, num_gpus=1, throughput=tau, source="reference",
                                   observed_at=timezone.now())
    # 4.5 steps/s: only a V100 serves it, as the replica; with the lower id it would keep the GPU
    # where jobs leaving a shared GPU were placed by id alone.
    training = job_submit(owner=alice, workload=lm, min_throughput=4.5, max_gpus=1).job
    service = service_create(owner=alice, data={"name": "ranker", "workload": resnet50, "latency_bound_ms": 500.0,
                                                "batch_size": 64, "expected_rate_rps": 100.0})
    replica = service.replicas.get()
    gpu = next(g for g in measured if g.gpu_type == v100)
    long_ago = timezone.now() - timedelta(hours=2)
    for job, partner in ((replica, training), (training, replica)):
        job_transition(job=job_transition(job=job, to=JobState.PLACED.value), to=JobState.RUNNING.value)
        Allocation.objects.create(job=job, gpu=gpu, start=long_ago, predicted_throughput=5.0,
                                  predicted_power_w=150.0).partners.set([partner])
    Job.objects.filter(pk__in=[replica.pk, training.pk]).update(placed_at=long_ago)  # out of the cool-down
    return service, replica, training, gpu


def _gpus(job):
    return set(job.allocations.filter(end__isnull=True).values_list("gpu_id", flat=True))


def test_rising_traffic_moves_the_training_partner_away_and_not_the_replica(shared_v100):
    service, replica, training, gpu = shared_v100
    scheduling_round_run(trigger="periodic")
    assert _gpus(replica) == _gpus(training) == {gpu.pk}  # 100 requests/s need 2.8 steps/s: 5 suffice

    ServiceTraffic.objects.create(service=service, job=replica, at=timezone.now(), request_rate_rps=450.0)
    scheduling_round_run(trigger="periodic")
    replica.refresh_from_db()
    training.refresh_from_db()
    assert replica.min_throughput > 5.0  # 450 requests/s need 7.3 steps/s: the pair no longer gives them
    assert replica.state == JobState.RUNNING.value and _gpus(replica) == {gpu.pk}
    assert training.state == JobState.PLACED.value and _gpus(training) and gpu.pk not in _gpus(training)
    assert not Allocation.objects.get(job=replica, end__isnull=True).partners.exists()


def test_the_replicas_of_a_service_whose_slo_is_at_risk_are_stated_alone(shared_v100):
    """A plan that cannot meet the SLO says so in slo_note; the round then states the service's
    replicas as running alone (JobSpec.alone) and releases their partners (service_partners.py)."""
    from scheduler.models import Service, SolverConfig
    from scheduler.problem_source import problem_from_database

    service, replica, training, _ = shared_v100
    specs = {spec.id: spec for spec in problem_from_database(SolverConfig.load()).jobs}
    assert not specs[str(replica.pk)].alone and not specs[str(training.pk)].alone
    assert specs[str(replica.pk)].current.partners == (str(training.pk),)
    Service.objects.filter(pk=service.pk).update(slo_note="at 5000 requests/s even 8 replicas need more")
    problem = problem_from_database(SolverConfig.load())
    specs = {spec.id: spec for spec in problem.jobs}
    assert specs[str(replica.pk)].alone and specs[str(replica.pk)].service and not specs[str(training.pk)].alone
    # the pair meets the replica's T_min (problem_from_database released nothing before), yet the partner goes
    assert specs[str(training.pk)].current is None and specs[str(replica.pk)].current.partners == ()
