"""bench_executor_sync end to end in its own process (it makes and drops a scratch database),
and the job events of a sync sent as one batch once its transactions committed."""
import os
import subprocess
import sys
from pathlib import Path

from gogh_web.events.models import Event
from scheduler import live
from scheduler.dispatch.executor_sync import executor_sync
from scheduler.executors.base import FAILED, RUNNING, SUCCEEDED
from scheduler.models import ExecutorRun

ROOT = Path(__file__).resolve().parents[4]


def test_the_benchmark_syncs_recorded_shape_output_and_prints_its_keys(tmp_path):
    done = subprocess.run([sys.executable, "manage.py", "bench_executor_sync", "--jobs", "60"], cwd=ROOT,
                          env={**os.environ, "GOGH_VAR_DIR": str(tmp_path / "var"), "GOGH_LOG_LEVEL": "WARNING"},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    keys = dict(line.split(" ", 1) for line in done.stdout.splitlines() if line.startswith("executor_sync."))
    assert set(keys) == {"executor_sync.jobs", "executor_sync.cpu_s_first", "executor_sync.cpu_s_steady"}
    assert keys["executor_sync.jobs"] == "60" and float(keys["executor_sync.cpu_s_steady"]) > 0
    first = next(line for line in done.stdout.splitlines() if line.startswith("first"))
    # 60 jobs: 54 GOGH's, 9 ended (3 each of succeeded, failed, exit 75), 6 started since; 6 others' runs
    assert "ended 9" in first and "started 6" in first and "foreign_gpus 6" in first and "ERROR" not in first
    steady = next(line for line in done.stdout.splitlines() if line.startswith("steady"))
    assert "ended" not in steady and "started" not in steady and "submitted" not in steady


def test_a_syncs_job_events_go_out_as_one_batch_after_its_commits(slurm, place, monkeypatch,
                                                                  django_capture_on_commit_callbacks):
    jobs = [place(indexes=(index,)) for index in range(3)]
    executor_sync(executor=slurm)
    runs = {run.job_id: run.external_id for run in ExecutorRun.objects.all()}
    slurm.set(runs[jobs[0].pk], state=RUNNING, gpu_indexes=(0,))
    slurm.set(runs[jobs[1].pk], state=SUCCEEDED, native_state="COMPLETED", exit_code=0, gpu_indexes=(1,))
    slurm.set(runs[jobs[2].pk], state=FAILED, native_state="FAILED", exit_code=3, gpu_indexes=(2,))
    before = Event.objects.filter(kind="job").count()
    batches = []
    real = live.send_changes
    monkeypatch.setattr(live, "send_changes", lambda build: batches.append(build) or real(build))
    with django_capture_on_commit_callbacks(execute=True):
        executor_sync(executor=slurm)
    assert len(batches) == 1
    stored = Event.objects.filter(kind="job").order_by("id")[before:]
    assert {event.key for event in stored} >= {str(job.pk) for job in jobs}
    assert {event.data["state"] for event in stored if event.data and event.key in {str(j.pk) for j in jobs}} == {
        "running", "succeeded", "failed"}
