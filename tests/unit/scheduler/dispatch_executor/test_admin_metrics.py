"""Operators see the executor's runs and syncs in the admin (read-only: they are what the sync
found) and in /metrics (syncs by outcome, the latest one's CPU seconds, unsettled runs)."""
from scheduler.dispatch.executor_sync import executor_sync
from scheduler.executors.base import RUNNING, ExecutorError
from scheduler.models import ExecutorRun


def test_runs_and_syncs_are_listed_and_shown_never_changed(client, root, slurm, place):
    place()
    sync = executor_sync(executor=slurm)
    run = ExecutorRun.objects.get()
    for url in ("/admin/scheduler/executorrun/", f"/admin/scheduler/executorrun/{run.pk}/change/",
                "/admin/scheduler/executorsync/", f"/admin/scheduler/executorsync/{sync.pk}/change/"):
        assert client.get(url).status_code == 200, url
    assert client.get("/admin/scheduler/executorrun/add/").status_code == 403
    response = client.post(f"/admin/scheduler/executorrun/{run.pk}/change/", {"external_id": "9", "state": "failed"})
    assert response.status_code == 403 and ExecutorRun.objects.get().external_id == run.external_id
    assert client.post(f"/admin/scheduler/executorsync/{sync.pk}/delete/", {"post": "yes"}).status_code == 403


def test_metrics_count_syncs_by_outcome_and_unsettled_runs_by_state(client_for, staff, slurm, place):
    place()
    executor_sync(executor=slurm)
    run = ExecutorRun.objects.get()
    slurm.set(run.external_id, state=RUNNING, gpu_indexes=(0,))
    executor_sync(executor=slurm)
    slurm.broken = ExecutorError("sinfo --json", "timed out")
    executor_sync(executor=slurm)
    text = client_for(staff).get("/metrics").content.decode()
    assert 'gogh_executor_syncs{outcome="ok"} 2.0' in text and 'gogh_executor_syncs{outcome="error"} 1.0' in text
    assert 'gogh_executor_runs_unsettled{state="running"} 1.0' in text
    assert 'gogh_executor_runs_unsettled{state="pending"} 0.0' in text
    assert "gogh_executor_sync_last_cpu_seconds " in text
