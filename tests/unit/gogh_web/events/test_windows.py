"""Windows: whatever leaves the ended-jobs or solve-runs window gets a delete, worked out after
the commit under the event lock, so that changes committed concurrently each push out their own
object instead of both picking the same one."""
from gogh_web.events.models import Event
from gogh_web.events.selectors import events_after, snapshot, viewer_for
from scheduler import services
from scheduler.models import Job

from .conftest import apply_events, plain


def _pending_jobs(owner, workload, count, committed):
    with committed():
        return [
            services.job_submit(owner=owner, workload=workload, min_throughput=1, max_gpus=1).job for _ in range(count)
        ]


def test_two_jobs_ending_concurrently_each_push_out_their_own_ended_job(
    measured, alice, staff, resnet50, committed, django_capture_on_commit_callbacks, settings
):
    settings.GOGH_LIVE_ENDED_JOBS_KEPT = 2
    old, older, a, b = _pending_jobs(alice, resnet50, 4, committed)
    for job in (older, old):  # the window holds these two ended jobs
        with committed():
            services.job_cancel(job=job, by=alice)
    viewer = viewer_for(staff)
    start = plain(snapshot(viewer))
    assert set(start["state"]["job"]) == {str(j.pk) for j in (old, older, a, b)}

    # a's transaction commits, but b's ran alongside it and never saw a's end (PostgreSQL,
    # READ COMMITTED): both services return before either's after-commit work runs.
    with django_capture_on_commit_callbacks() as first:
        services.job_cancel(job=a, by=alice)
    ended = Job.objects.filter(pk=a.pk).values("state", "state_reason", "pending_reason", "finished_at").get()
    Job.objects.filter(pk=a.pk).update(state="pending", pending_reason="Waiting.", finished_at=None)  # hidden from b
    with django_capture_on_commit_callbacks() as second:
        services.job_cancel(job=Job.objects.get(pk=b.pk), by=alice)
    Job.objects.filter(pk=a.pk).update(**ended)
    for callback in [*first, *second]:
        callback()

    deleted = set(Event.objects.filter(kind="job", op="delete").values_list("key", flat=True))
    assert deleted == {str(old.pk), str(older.pk)}  # both left the window of two
    events = events_after(viewer, start["event_id"], limit=10_000)
    assert apply_events(start["state"], events) == plain(snapshot(viewer)["state"])


def test_a_larger_window_sends_the_jobs_that_entered_it(measured, alice, staff, resnet50, committed, settings):
    settings.GOGH_LIVE_ENDED_JOBS_KEPT = 1
    first, second, third = _pending_jobs(alice, resnet50, 3, committed)
    for job in (first, second):
        with committed():
            services.job_cancel(job=job, by=alice)
    viewer = viewer_for(staff)
    start = plain(snapshot(viewer))
    assert str(first.pk) not in start["state"]["job"]

    settings.GOGH_LIVE_ENDED_JOBS_KEPT = 3
    with committed():
        services.job_cancel(job=third, by=alice)
    events = events_after(viewer, start["event_id"], limit=10_000)
    assert [(e["key"], e["op"]) for e in events if e["key"] == str(first.pk)] == [(str(first.pk), "upsert")]
    assert apply_events(start["state"], events) == plain(snapshot(viewer)["state"])
