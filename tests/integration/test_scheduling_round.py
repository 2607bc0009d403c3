"""A scheduling round runs as a real Celery task in a worker process (embedded broker and
Redis), reading and writing the same database as the control plane."""
import pytest
from django.utils import timezone

from catalog.models import Measurement
from scheduler import services
from scheduler.models import SolveRun
from telemetry.models import Gpu, Node

pytestmark = pytest.mark.django_db(transaction=True)


def test_worker_runs_a_scheduling_round(worker, alice, v100, k80, resnet50, monkeypatch):
    # Submitting asks for a debounced round of its own; this test sends the round itself.
    monkeypatch.setattr(services, "scheduling_round_request", lambda **kwargs: None)
    node = Node.objects.create(hostname="v100-a", approved_at=timezone.now())
    for i in range(2):
        Gpu.objects.create(node=node, index=i, uuid=f"GPU-v{i}", gpu_type=v100)
    Measurement.objects.create(
        workload=resnet50, gpu_type=v100, throughput=10.0, source="reference", observed_at=timezone.now()
    )
    placed = services.job_submit(owner=alice, workload=resnet50, min_throughput=8, max_gpus=1).job
    hopeless = services.job_submit(owner=alice, workload=resnet50, min_throughput=80, max_gpus=2).job

    result = worker.send_task("scheduler.tasks.scheduling_round", kwargs={"trigger": "periodic"})
    try:
        run_id = result.get(timeout=120)
    except Exception as exc:  # show what the worker said, whatever went wrong
        pytest.fail(f"{worker.broker_name}: {exc!r}\n{worker.worker_log.read_text()}")

    run = SolveRun.objects.get(pk=run_id)
    assert run.trigger == "periodic" and run.status == "optimal" and run.num_placed == 1
    placed.refresh_from_db(), hopeless.refresh_from_db()
    assert placed.state == "placed" and placed.allocations.get().solve_run == run
    assert hopeless.state == "pending" and "T_min" in hopeless.pending_reason
    assert worker.worker_process.poll() is None


def test_a_worker_round_with_theta_three_puts_three_jobs_on_one_gpu(worker, alice, v100, resnet50, monkeypatch):
    """theta 3 in the settings: ResNet-50 does 10/s alone and 8/s next to another ResNet-50
    (measured pair); next to two, by the additive-slowdown estimate, 6.67/s >= T_min 5: the
    three jobs share the one GPU, each allocation naming the other two (at the default limit, as
    hand-checked)."""
    monkeypatch.setattr(services, "scheduling_round_request", lambda **kwargs: None)
    services.solver_config_update(by=None, values={"theta": 3, "power_limits": False})
    node = Node.objects.create(hostname="v100-g", approved_at=timezone.now())
    gpu = Gpu.objects.create(node=node, index=0, uuid="GPU-g0", gpu_type=v100)
    now = timezone.now()
    Measurement.objects.create(workload=resnet50, gpu_type=v100, throughput=10.0, source="reference", observed_at=now)
    Measurement.objects.create(workload=resnet50, gpu_type=v100, partner=resnet50, throughput=8.0, source="reference",
                               observed_at=now)
    jobs = [services.job_submit(owner=alice, workload=resnet50, min_throughput=5, max_gpus=1).job for _ in range(3)]

    result = worker.send_task("scheduler.tasks.scheduling_round", kwargs={"trigger": "periodic"})
    try:
        run_id = result.get(timeout=120)
    except Exception as exc:
        pytest.fail(f"{worker.broker_name}: {exc!r}\n{worker.worker_log.read_text()}")

    assert SolveRun.objects.get(pk=run_id).num_placed == 3
    for job in jobs:
        allocation = job.allocations.get(end__isnull=True)
        assert allocation.gpu == gpu
        assert set(allocation.partners.values_list("pk", flat=True)) == {j.pk for j in jobs} - {job.pk}
        assert allocation.predicted_throughput == pytest.approx(20 / 3)


def test_cells_are_solved_in_parallel_by_workers(worker):
    """The group path of scheduler.cell_runner against a real worker, on both brokers."""
    from dataclasses import replace

    from scheduler.cell_runner import solve_cells
    from scheduler.optimizer import get_solver
    from scheduler.optimizer.cells import partition
    from tests.unit.scheduler.optimizer.factory import TablePredictions, gpu_type, job, node, problem

    preds = TablePredictions(taus={("a", t, 1, True): 10 for t in ("fast", "slow")}, rhos={("a", "a", "fast"): 0.6})
    whole = problem([job(i, "a", tmin=5) for i in range(6)], node("fast", "f", 4) + node("slow", "s", 4),
                    [gpu_type("fast", 300), gpu_type("slow", 100)], preds, cell_size_gpus=4)
    cells = partition(whole)
    parts = [replace(whole, jobs=whole.jobs[k::2], gpus=tuple(cells[name])) for k, name in enumerate(sorted(cells))]

    try:
        allocations = solve_cells(parts, app=worker, parallel=True)
    except Exception as exc:
        pytest.fail(f"{worker.broker_name}: {exc!r}\n{worker.worker_log.read_text()}")
    assert all("Solved in turn" not in " ".join(a.notes) for a in allocations), worker.worker_log.read_text()
    assert [a.placements for a in allocations] == [get_solver("ilp").solve(p).placements for p in parts]
