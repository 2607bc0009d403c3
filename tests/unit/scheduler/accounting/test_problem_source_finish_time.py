"""The round's problem carries each job's expected finish-time fairness (optimizer.finish_time):
time since submission plus its steps left at T_min, over its time with 1/n of the cluster."""
from datetime import timedelta

import pytest

from scheduler import services
from scheduler.models import Job, SolverConfig
from scheduler.problem_source import problem_from_database


def test_a_job_an_hour_in_with_half_its_steps_left_is_half_again_as_far_behind(measured, alice, bob, resnet50):
    old = services.job_submit(owner=alice, workload=resnet50, min_throughput=8.0, max_gpus=1, total_steps=28800).job
    new = services.job_submit(owner=bob, workload=resnet50, min_throughput=8.0, max_gpus=1, total_steps=28800).job
    unknown = services.job_submit(owner=bob, workload=resnet50, min_throughput=8.0, max_gpus=1).job
    Job.objects.filter(pk=old.pk).update(submitted_at=old.submitted_at - timedelta(hours=1), steps_done=14400)
    specs = {spec.id: spec for spec in problem_from_database(SolverConfig.load()).jobs}
    # 1/3 of 4 V100 (10 steps/s) and 2 K80 (4): 4/3 + 2/3 of the time, scaled to 2/3 and 1/3,
    # f = 10 x 2/3 + 4 / 3 = 8 steps/s. new (0 + 28800 / 8) / (28800 / 8) = 1;
    # old (3600 + 14400 / 8) / (28800 / 8) = 1.5
    assert specs[str(new.pk)].finish_time_fairness == pytest.approx(1.0, rel=1e-3)
    assert specs[str(old.pk)].finish_time_fairness == pytest.approx(1.5, rel=1e-3)
    assert specs[str(unknown.pk)].finish_time_fairness == 1.0
