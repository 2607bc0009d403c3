"""A job's interruptions in its live dict: all counted, the newest few listed, read in one query
for every job of a snapshot or an event batch."""
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from gogh_web.events.selectors import snapshot, viewer_for
from scheduler import live
from scheduler.models import Job, JobInterruption
from scheduler.selectors import tenant_of

T0 = datetime(2026, 12, 2, 5, 0, 0, tzinfo=UTC)


@pytest.fixture
def jobs(alice, resnet50):
    def job(name):
        return Job.objects.create(name=name, owner=alice, tenant=tenant_of(alice), workload=resnet50,
                                  min_throughput=1, max_gpus=1, total_steps=5000, state="pending",
                                  pending_reason="Waiting for a round.")
    return job("often"), job("once"), job("never")


def interrupt(job, minutes, kind="moved", steps_done=100, resume_step=0):
    return JobInterruption.objects.create(
        job=job, kind=kind, reason=f"{kind} at minute {minutes}", at=T0 + timedelta(minutes=minutes),
        was_running=True, steps_done=steps_done, resume_step=resume_step, steps_lost=steps_done - resume_step,
    )


def test_all_are_counted_the_newest_five_listed_newest_first(jobs):
    often, once, never = jobs
    made = [interrupt(often, minute, steps_done=100 * minute) for minute in range(7)]
    tied = interrupt(often, 6, kind="preempted", steps_done=700, resume_step=600)  # same time: the later row first
    interrupt(once, 3, kind="node_down")

    data = live.jobs_data(Job.objects.all())

    shown = data[str(often.pk)]["interruptions"]
    assert shown["count"] == 8
    assert [(i["kind"], i["at"]) for i in shown["results"]] == [("preempted", tied.at.isoformat())] + [
        ("moved", m.at.isoformat()) for m in reversed(made[3:])
    ]
    assert shown["results"][0] == {"kind": "preempted", "reason": "preempted at minute 6", "at": tied.at.isoformat(),
                                   "steps_done": 700, "resume_step": 600, "steps_lost": 100, "was_running": True}
    assert data[str(once.pk)]["interruptions"]["count"] == 1
    assert data[str(once.pk)]["interruptions"]["results"][0]["kind"] == "node_down"
    assert data[str(never.pk)]["interruptions"] == {"count": 0, "results": []}


def test_one_query_reads_the_interruptions_of_every_job(jobs):
    for job in jobs[:2]:
        for minute in range(3):
            interrupt(job, minute)
    with CaptureQueriesContext(connection) as queries:
        live.jobs_data(Job.objects.all())
    assert sum("scheduler_jobinterruption" in q["sql"] for q in queries.captured_queries) == 1


def test_a_jobs_interruptions_are_seen_by_its_tenant_and_staff_only(jobs, bob, staff):
    """They travel inside the job's dict, so they go where the job goes."""
    interrupt(jobs[0], 1, kind="preempted")
    for user, sees in ((jobs[0].owner, True), (staff, True), (bob, False)):
        shown = snapshot(viewer_for(user))["state"]["job"]
        assert (str(jobs[0].pk) in shown) is sees, user
        if sees:
            assert shown[str(jobs[0].pk)]["interruptions"]["results"][0]["kind"] == "preempted"
