"""The jobs' admin: an ended job is read-only, numbers read at three figures, times to the
second, and a pending reason does not make its row several lines tall."""
import re
from datetime import UTC, datetime

import pytest
from django.contrib.admin.models import LogEntry
from django.forms.models import model_to_dict
from django.utils import timezone

from scheduler import services
from scheduler.admin import JobAdmin
from scheduler.models import Allocation, Job, SolveRun

EDITABLE = {"name": "renamed", "priority": "9", "total_steps": "777", "deadline_0": "", "deadline_1": "",
            "command": "python train.py --again"}
INLINE = {"allocations-TOTAL_FORMS": "0", "allocations-INITIAL_FORMS": "0",
          "interruptions-TOTAL_FORMS": "0", "interruptions-INITIAL_FORMS": "0"}


@pytest.fixture
def job(alice, resnet50, cluster):
    return services.job_submit(owner=alice, workload=resnet50, min_throughput=1, max_gpus=1, total_steps=100,
                               command="python train.py").job


def run_to(job, *states):
    for state in states:
        job = services.job_transition(job=job, to=state, reason=f"test: {state}")
    return job


def row(job):
    return {**model_to_dict(Job.objects.get(pk=job.pk)), "updated_at": Job.objects.get(pk=job.pk).updated_at}


def test_an_ended_job_is_read_only_and_a_change_to_it_is_refused_with_nothing_written(client, root, job):
    ended = run_to(job, "placed", "running", "succeeded")
    url = f"/admin/scheduler/job/{ended.pk}/change/"
    page = client.get(url).content.decode()
    for field in ("name", "priority", "total_steps", "command", "deadline_0"):
        assert f'name="{field}"' not in page, field
    assert "python train.py" in page and 'name="_save"' not in page  # shown, not offered for saving
    before = row(ended)
    response = client.post(url, {**EDITABLE, **INLINE, "_save": "Save"})
    assert response.status_code == 403
    assert row(ended) == before
    assert not LogEntry.objects.exists()


def test_a_job_that_ended_after_its_page_was_loaded_is_not_written(client, root, job, monkeypatch):
    """The page (and the object the admin reads first) still says running; the job's row under
    its lock says it ended: the save is refused, and neither the edit nor the stale state lands."""
    stale = run_to(job, "placed", "running")
    run_to(stale, "succeeded")
    monkeypatch.setattr(JobAdmin, "get_object", lambda self, request, object_id, from_field=None: stale)
    before = row(stale)
    response = client.post(f"/admin/scheduler/job/{stale.pk}/change/", {**EDITABLE, **INLINE, "_save": "Save"})
    assert response.status_code == 403
    assert row(stale) == before and before["state"] == "succeeded"


def test_a_running_jobs_priority_is_saved_alone(client, root, job, monkeypatch):
    """The object the admin read says 0 steps; its agent reported 40 since: the save writes the
    priority and leaves the progress."""
    running = run_to(job, "placed", "running")
    Job.objects.filter(pk=running.pk).update(steps_done=40)
    monkeypatch.setattr(JobAdmin, "get_object", lambda self, request, object_id, from_field=None: running)
    fields = {"name": "", "priority": "5", "total_steps": "100", "deadline_0": "", "deadline_1": "",
              "command": "python train.py"}
    response = client.post(f"/admin/scheduler/job/{running.pk}/change/", {**fields, **INLINE, "_save": "Save"})
    assert response.status_code == 302
    saved = Job.objects.get(pk=running.pk)
    assert (saved.priority, saved.steps_done, saved.state, saved.total_steps) == (5, 40, "running", 100)


def test_predicted_throughput_and_power_show_three_figures_and_keep_every_digit(client, root, job, cluster):
    allocation = Allocation.objects.create(job=job, gpu=cluster[0], start=timezone.now(),
                                           predicted_throughput=4.307990192432654, predicted_power_w=212.71828)
    listing = client.get("/admin/scheduler/allocation/").content.decode()
    assert '<td class="field-predicted_throughput">4.31</td>' in listing
    assert '<td class="field-predicted_power_w">213</td>' in listing
    inline = client.get(f"/admin/scheduler/job/{job.pk}/change/").content.decode()
    assert re.search(r'field-predicted_throughput">\s*<p>4.31</p>', inline)
    assert "4.307990192432654" not in listing + inline
    # the allocation's own form edits the stored value, so it shows every digit
    form = client.get(f"/admin/scheduler/allocation/{allocation.pk}/change/").content.decode()
    assert 'value="4.307990192432654"' in form
    assert Allocation.objects.get(pk=allocation.pk).predicted_throughput == 4.307990192432654


def test_a_long_pending_reason_is_clipped_at_a_word_in_the_list_and_whole_in_its_title(client, root, job):
    reason = ("No GPU type reaches T_min = 50 steps/s within D_j = 2 GPU(s): the best is 7.5 steps/s "
              "on 2 x v100.")
    Job.objects.filter(pk=job.pk).update(pending_reason=reason)
    listing = client.get("/admin/scheduler/job/").content.decode()
    cell = re.search(r'<td class="field-pending_reason_clipped">(.*?)</td>', listing).group(1)
    assert cell == f'<span title="{reason}">No GPU type reaches T_min = 50 steps/s within D_j = 2\u2026</span>'
    detail = client.get(f"/admin/scheduler/job/{job.pk}/change/").content.decode()
    assert reason in detail


def test_times_in_the_lists_show_seconds(client, root):
    run = SolveRun.objects.create(trigger="manual", solver="ilp", status="optimal", objective=1234.5678)
    SolveRun.objects.filter(pk=run.pk).update(started_at=datetime(2026, 12, 2, 2, 17, 57, tzinfo=UTC))
    listing = client.get("/admin/scheduler/solverun/").content.decode()
    assert '<td class="field-started_at nowrap">2026-12-02 02:17:57 UTC</td>' in listing
    assert '<td class="field-objective">1235</td>' in listing
