"""GPUs a run GOGH did not submit holds (Gpu.external_holder, set from Slurm's foreign jobs):
the problem built from the database offers them to nobody, a job of GOGH's already allocated
there keeps its allocation (as on a draining node), and a round places nothing there."""
from django.utils import timezone

from scheduler import services
from scheduler.models import Allocation, Job, SolverConfig
from scheduler.problem_source import problem_from_database
from telemetry.models import Gpu


def submit(owner, workload):
    return services.job_submit(owner=owner, workload=workload, min_throughput=1.0, max_gpus=1).job


def hold(gpu, holder="someone-else (Slurm job 12)"):
    Gpu.objects.filter(pk=gpu.pk).update(external_holder=holder)


def offered(problem):
    return {spec.id for spec in problem.gpus}


def test_a_held_gpu_is_not_offered_to_the_optimiser(measured):
    hold(measured[0])
    problem = problem_from_database(SolverConfig.load())
    assert str(measured[0].pk) not in offered(problem)
    assert offered(problem) == {str(gpu.pk) for gpu in measured[1:]}


def test_a_job_allocated_on_a_held_gpu_keeps_its_allocation(measured, alice, resnet50):
    job = submit(alice, resnet50)
    services.job_transition(job=job, to="placed")
    Allocation.objects.create(job=job, gpu=measured[0], start=timezone.now())
    waiting = submit(alice, resnet50)
    hold(measured[0])

    problem = problem_from_database(SolverConfig.load())
    assert [spec.id for spec in problem.jobs] == [str(waiting.pk)]  # the held one is left where it is
    assert str(measured[0].pk) not in offered(problem)

    services.scheduling_round_run(trigger="manual")
    assert Allocation.objects.get(job=job, end__isnull=True).gpu_id == measured[0].pk
    assert Job.objects.get(pk=job.pk).state == "placed"
    assert not Allocation.objects.filter(gpu=measured[0]).exclude(job=job).exists()


def test_a_round_places_nothing_on_held_gpus(measured, alice, resnet50):
    for gpu in measured[1:]:
        hold(gpu)
    jobs = [submit(alice, resnet50) for _ in range(3)]
    services.scheduling_round_run(trigger="manual")
    assert set(Allocation.objects.filter(job__in=jobs).values_list("gpu_id", flat=True)) == {measured[0].pk}

    Gpu.objects.update(external_holder="")  # the foreign runs ended: the GPUs take work again
    services.scheduling_round_run(trigger="manual")
    assert Allocation.objects.filter(job__in=jobs, end__isnull=True).count() == 3
