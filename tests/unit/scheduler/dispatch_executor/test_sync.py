"""The sync as a whole: a snapshot that cannot be read writes nothing but its record; records
are kept to the newest KEEP_SYNCS; the agent executor has nothing to sync; in slurm mode agents
get nothing to run, and a round's decision or a cancel asks for a sync at once."""
import json
import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.utils import timezone

from gogh_web.outbox.models import OutboxMessage
from scheduler import services
from scheduler.dispatch import executor_sync as sync_module
from scheduler.dispatch.assignments import node_assignments
from scheduler.dispatch.executor_settings import executor_from_settings
from scheduler.dispatch.executor_sync import executor_sync
from scheduler.executors.agent import AgentExecutor
from scheduler.executors.base import RUNNING, ExecutorError, NodeStatus
from scheduler.models import ExecutorRun, ExecutorSync, Job, SolveRun
from scheduler.optimizer import problem as opt
from scheduler.tasks import executor_sync as executor_sync_task
from telemetry.models import Gpu

from .test_stops import move


def test_a_snapshot_that_fails_writes_nothing_but_the_syncs_record(slurm, place):
    job = place()
    executor_sync(executor=slurm)
    run = ExecutorRun.objects.get()
    slurm.set(run.external_id, state=RUNNING, gpu_indexes=(0,))
    slurm.broken = ExecutorError("squeue --json", "timed out after 15 s")
    other = place(indexes=(1,))
    sync = executor_sync(executor=slurm)
    assert (sync.ok, sync.command, sync.error, sync.stats) == (False, "squeue --json", "squeue --json: timed out after "
                                                                                      "15 s", {})
    assert sync.cpu_s is not None and sync.finished_at is not None
    assert Job.objects.get(pk=job.pk).state == "placed" and Job.objects.get(pk=other.pk).state == "placed"
    assert list(ExecutorRun.objects.values_list("state", flat=True)) == ["pending"] and len(slurm.launches) == 1
    slurm.broken = None
    repaired = executor_sync(executor=slurm)
    assert repaired.ok and Job.objects.get(pk=job.pk).state == "running" and len(slurm.launches) == 2


def test_only_the_newest_syncs_are_kept(slurm, monkeypatch, db):
    monkeypatch.setattr(sync_module, "KEEP_SYNCS", 3)
    records = [executor_sync(executor=slurm).pk for _ in range(5)]
    assert sorted(ExecutorSync.objects.values_list("pk", flat=True)) == records[-3:]


def test_with_the_agent_executor_there_is_nothing_to_sync(db, place, settings):
    settings.GOGH_EXECUTOR = "agent"
    assert isinstance(executor_from_settings(), AgentExecutor)
    assert executor_sync() is None and executor_sync_task() is None
    assert not ExecutorSync.objects.exists() and not ExecutorRun.objects.exists()


def test_in_slurm_mode_agents_get_nothing_to_run(place, node, settings):
    place()
    assert node_assignments(node, for_its_agent=True) == []
    settings.GOGH_EXECUTOR = "agent"
    assert [entry["gpu_indexes"] for entry in node_assignments(node, for_its_agent=True)] == [[0]]


def sync_requests():
    return OutboxMessage.objects.filter(task="scheduler.tasks.executor_sync").count()


@pytest.mark.parametrize("executor, asked", [("slurm", 1), ("agent", 0)])
def test_a_decision_that_moves_a_job_and_a_cancel_ask_for_a_sync(place, node, alice, settings, executor, asked):
    settings.GOGH_EXECUTOR = executor
    job = place()
    OutboxMessage.objects.all().delete()
    move(job, node.gpus.get(index=2))
    assert sync_requests() == asked
    OutboxMessage.objects.all().delete()
    services.job_cancel(job=Job.objects.get(pk=job.pk), by=alice)
    assert sync_requests() == asked


def test_a_round_that_only_changes_reasons_asks_for_no_sync(place, settings, db):
    job = place()
    job = services.job_transition(job=job, to="pending", reason="Waiting.", now=timezone.now())
    OutboxMessage.objects.all().delete()
    plan = opt.Plan(solver="ilp", placements={}, reasons={str(job.pk): "No room."}, power_w=0.0, objective=0.0,
                    status="optimal", energy_weight=1.0, load=0.0)
    services._apply(plan, SolveRun.objects.create(solver="ilp", trigger="manual"), timezone.now())
    assert sync_requests() == 0


@pytest.mark.parametrize("executor, entry", [
    ("slurm", {"task": "scheduler.tasks.executor_sync", "schedule": 3.5, "options": {"expires": 3.5}}),
    ("agent", None),
])
def test_beat_syncs_every_sync_s_in_slurm_mode_only(tmp_path, executor, entry):
    """Settings load once per process, so each mode is read in a process of its own."""
    clean = {name: value for name, value in os.environ.items() if not name.startswith("GOGH_")}
    code = ("import django, json; django.setup(); from django.conf import settings; "
            "print(json.dumps(settings.CELERY_BEAT_SCHEDULE.get('executor-sync')))")
    done = subprocess.run([sys.executable, "-c", code], cwd=settings.BASE_DIR, capture_output=True, text=True,
                          timeout=120, env={**clean, "DJANGO_SETTINGS_MODULE": "gogh_web.settings",
                                            "GOGH_VAR_DIR": str(tmp_path), "GOGH_EXECUTOR": executor,
                                            "GOGH_SLURM_SYNC_S": "3.5"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == entry


def test_a_run_another_sync_submitted_after_the_snapshot_is_not_taken_for_lost(slurm, place, monkeypatch):
    job = place()
    real = slurm.snapshot

    def meanwhile(**kwargs):
        snapshot = real(**kwargs)
        ExecutorRun.objects.create(job=job, executor="slurm", external_id="4242", submitted_at=timezone.now(),
                                   node=job.allocations.get().gpu.node)
        return snapshot

    monkeypatch.setattr(slurm, "snapshot", meanwhile)
    sync = executor_sync(executor=slurm)
    job.refresh_from_db()
    assert job.state == "placed" and ExecutorRun.objects.get().settled_at is None
    assert slurm.launches == [] and slurm.signals == [] and sync.ok


def test_a_gres_type_of_no_gpu_type_is_left_out_and_said(slurm, place, node):
    slurm.nodes = [NodeStatus(name="n-v100", up=True, gpus={"v100": 4}, shards_per_gpu=2),
                   NodeStatus(name="n-x", up=True, gpus={"a100": 2})]
    sync = executor_sync(executor=slurm)
    assert sync.ok and sync.stats["left_out"] == [
        "node n-x: gres type 'a100' maps to no GPU type ('a100'); its 2 GPU(s) left out"]
    assert "n-x: gres type 'a100'" in sync.error
    assert not Gpu.objects.filter(node__hostname="n-x").exists()


def test_an_inventory_telemetry_refuses_is_recorded_and_the_runs_go_on(slurm, place):
    job = place()
    slurm.nodes = [*slurm.nodes, NodeStatus(name="bad host!", up=True, gpus={"v100": 1})]
    sync = executor_sync(executor=slurm)
    assert not sync.ok and sync.command == "inventory"
    assert [launch.job_id for launch in slurm.launches] == [job.pk]
