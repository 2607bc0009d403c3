"""The jobs API shows what a job kept of its work: its grace period (asked for on
submission), its current run's step, its checkpoint, its restarts and the steps they lost, and
each interruption with its reason (GET /api/jobs/{id}/interruptions/), to its tenant only."""
from datetime import timedelta

import pytest
from django.utils import timezone

from scheduler.models import InterruptionKind, Job, JobInterruption, SolveRun


def test_a_grace_period_asked_for_is_kept_and_shown(submit, alice):
    response = submit(alice, preemption_grace_s=300)
    assert response.status_code == 201
    assert response.json()["preemption_grace_s"] == 300 == Job.objects.get(pk=response.json()["id"]).preemption_grace_s
    assert submit(alice).json()["preemption_grace_s"] == 60  # the default


@pytest.mark.parametrize("grace, message", [
    (0, "Ensure this value is greater than or equal to 1."),
    (3601, "Ensure this value is less than or equal to 3600."),
    (2.5, "A valid integer is required."),
    (None, "This field may not be null."),
])
def test_a_grace_period_out_of_range_is_400_and_submits_nothing(submit, alice, grace, message):
    response = submit(alice, preemption_grace_s=grace)
    assert response.status_code == 400 and response.json() == {"preemption_grace_s": [message]}
    assert not Job.objects.exists()


def test_a_job_shows_its_restart_fields(client_for, submit, alice):
    job_id = submit(alice, total_steps=1000).json()["id"]
    checkpointed = timezone.now()
    Job.objects.filter(pk=job_id).update(current_step=420, resume_step=400, steps_done=700, checkpoint_step=400,
                                         checkpoint_path="/shared/ckpt/400.pt", checkpoint_at=checkpointed,
                                         restarts=2, steps_lost=350)
    for body in (client_for(alice).get(f"/api/jobs/{job_id}/").json(), client_for(alice).get("/api/jobs/").json()[
            "results"][0]):
        assert {key: body[key] for key in ("steps_done", "current_step", "resume_step", "checkpoint_step",
                                           "checkpoint_path", "restarts", "steps_lost", "preemption_grace_s")} == {
            "steps_done": 700, "current_step": 420, "resume_step": 400, "checkpoint_step": 400,
            "checkpoint_path": "/shared/ckpt/400.pt", "restarts": 2, "steps_lost": 350, "preemption_grace_s": 60}
        assert body["checkpoint_at"] == checkpointed.isoformat().replace("+00:00", "Z")


def test_the_restart_fields_are_read_only_on_submission(submit, alice):
    response = submit(alice, restarts=0)
    assert response.status_code == 400 and "restarts" in response.json()
    assert not Job.objects.exists()


def test_a_jobs_interruptions_newest_first_paginated_for_its_tenant_only(client_for, submit, alice, bob, staff):
    job_id = submit(alice).json()["id"]
    run = SolveRun.objects.create(solver="ilp", trigger="manual")
    now = timezone.now()
    for n in range(3):
        JobInterruption.objects.create(job_id=job_id, kind=InterruptionKind.MOVED, reason=f"Moved by solve {n}.",
                                       at=now - timedelta(minutes=10 - n), solve_run=run, was_running=True,
                                       steps_done=100 * n + 50, resume_step=100 * n, steps_lost=50)
    JobInterruption.objects.filter(reason="Moved by solve 2.").update(overhead_s=12.5, resumed_at=now)
    url = f"/api/jobs/{job_id}/interruptions/"
    body = client_for(alice).get(url, {"page_size": 2}).json()
    assert body["count"] == 3 and body["next"] is not None
    first = body["results"][0]
    assert {key: first[key] for key in ("kind", "reason", "solve_run", "was_running", "steps_done", "resume_step",
                                        "steps_lost", "overhead_s")} == {
        "kind": "moved", "reason": "Moved by solve 2.", "solve_run": run.pk, "was_running": True, "steps_done": 250,
        "resume_step": 200, "steps_lost": 50, "overhead_s": 12.5}
    assert first["at"] and first["resumed_at"]
    assert [item["reason"] for item in body["results"]] == ["Moved by solve 2.", "Moved by solve 1."]
    assert client_for(staff).get(url).json()["count"] == 3
    assert client_for(bob).get(url).status_code == 404  # another tenant's job
    assert client_for(None).get(url).status_code == 401
