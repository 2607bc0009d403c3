"""The interruptions' admin: a read-only list filtered by kind and time, and the job's own
interruptions on its page; nothing in either can be added, changed or deleted."""
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.admin.models import LogEntry
from django.forms.models import model_to_dict

from scheduler import services
from scheduler.models import JobInterruption

T0 = datetime(2026, 12, 2, 5, 0, 0, tzinfo=UTC)
LONG = "Preempted for job 12 (priority 5), which no other GPU could serve within its T_min of 40 steps/s."


@pytest.fixture
def job(alice, resnet50, cluster):
    return services.job_submit(owner=alice, workload=resnet50, min_throughput=1, max_gpus=1, total_steps=5000).job


@pytest.fixture
def interruptions(job):
    def make(kind, reason, day, steps_done, resume_step, overhead_s=None):
        return JobInterruption.objects.create(
            job=job, kind=kind, reason=reason, at=T0 + timedelta(days=day), was_running=True, steps_done=steps_done,
            resume_step=resume_step, steps_lost=steps_done - resume_step, overhead_s=overhead_s,
        )
    return [make("moved", "Moved to 2 x v100 by round 3.", -3, 1540, 1200, overhead_s=12.3456),
            make("preempted", LONG, 0, 2200, 2000), make("node_down", "Node gpu-a went down: silent.", 0, 2100, 2000)]


def listed_ids(page):
    return {obj.pk for obj in page.context["cl"].result_list}


def test_the_list_filters_by_kind_and_time(client, root, interruptions):
    moved, preempted, node_down = interruptions
    url = "/admin/scheduler/jobinterruption/"
    page = client.get(url)
    assert page.status_code == 200 and listed_ids(page) == {moved.pk, preempted.pk, node_down.pk}
    body = page.content.decode()
    assert f'title="{LONG}"' in body and "12.3" in body and "12.3456" not in body  # clipped; three figures
    assert listed_ids(client.get(url, {"kind": "preempted"})) == {preempted.pk}
    since = {"at__gte": (T0 - timedelta(days=1)).isoformat(), "at__lt": (T0 + timedelta(days=1)).isoformat()}
    assert listed_ids(client.get(url, since)) == {preempted.pk, node_down.pk}
    assert listed_ids(client.get(url, {"at__year": "2026", "at__month": "11"})) == {moved.pk}  # the date hierarchy


def test_nothing_can_be_added_changed_or_deleted(client, root, interruptions):
    moved = interruptions[0]
    before = list(JobInterruption.objects.order_by("pk").values())
    page = client.get(f"/admin/scheduler/jobinterruption/{moved.pk}/change/").content.decode()
    assert "Moved to 2 x v100 by round 3." in page and 'name="_save"' not in page and 'name="reason"' not in page
    assert client.get("/admin/scheduler/jobinterruption/add/").status_code == 403
    changed = {**model_to_dict(moved, exclude=["solve_run", "overhead_s", "resumed_at"]), "reason": "rewritten",
               "steps_lost": "0", "_save": "Save"}
    assert client.post(f"/admin/scheduler/jobinterruption/{moved.pk}/change/", changed).status_code == 403
    assert client.post(f"/admin/scheduler/jobinterruption/{moved.pk}/delete/", {"post": "yes"}).status_code == 403
    bulk = {"action": "delete_selected", "_selected_action": [moved.pk], "post": "yes"}
    client.post("/admin/scheduler/jobinterruption/", bulk)
    assert list(JobInterruption.objects.order_by("pk").values()) == before
    assert not LogEntry.objects.exists()


def test_the_jobs_page_lists_its_interruptions_newest_first_read_only(client, root, job, interruptions):
    page = client.get(f"/admin/scheduler/job/{job.pk}/change/").content.decode()
    shown = [page.index(text) for text in (LONG, "Node gpu-a went down: silent.", "Moved to 2 x v100 by round 3.")]
    assert sorted(shown) == [shown[1], shown[0], shown[2]]  # same time: the later row first; then the older one
    assert "interruptions-TOTAL_FORMS" in page and 'name="interruptions-0-reason"' not in page
    assert 'name="interruptions-MAX_NUM_FORMS" value="0"' in page  # none can be added
    assert 'name="interruptions-0-DELETE"' not in page


def test_saving_the_job_keeps_its_interruptions_as_they_are(client, root, job, interruptions):
    """The page posts the inline back as the browser has it (ids, no fields): the job's edit is
    saved, and no interruption is changed, added or removed, even with an edited field slipped in."""
    before = list(JobInterruption.objects.order_by("pk").values())
    inline = {"interruptions-TOTAL_FORMS": "3", "interruptions-INITIAL_FORMS": "3",
              "allocations-TOTAL_FORMS": "0", "allocations-INITIAL_FORMS": "0"}
    for index, interruption in enumerate(JobInterruption.objects.filter(job=job)):
        inline |= {f"interruptions-{index}-id": interruption.pk, f"interruptions-{index}-job": job.pk,
                   f"interruptions-{index}-reason": "rewritten", f"interruptions-{index}-DELETE": "on"}
    fields = {"name": "renamed", "priority": "4", "total_steps": "5000", "deadline_0": "", "deadline_1": "",
              "command": "", "_save": "Save"}
    response = client.post(f"/admin/scheduler/job/{job.pk}/change/", {**fields, **inline})
    assert response.status_code == 302
    job.refresh_from_db()
    assert (job.name, job.priority) == ("renamed", 4)
    assert list(JobInterruption.objects.order_by("pk").values()) == before
