"""The Jobs page's Progress cell as the server renders it (static/js/dashboard/jobs.js draws the
same from the live dict; tests/integration/test_console_jobs_browser.py compares the two): the
current run's position, the best step a restart left behind, the checkpoint, the restart marker
with its sentence as title and name, and the newest interruptions."""
import re
from datetime import UTC, datetime, timedelta

from django.urls import reverse

from scheduler.models import Job, JobInterruption

T0 = datetime(2026, 12, 2, 5, 1, 2, tzinfo=UTC)


def progress_cell(browser_for, user, job):
    body = browser_for(user).get(reverse("dashboard:jobs")).content.decode()
    row = re.search(rf'<tr data-job="{job.pk}".*?</tr>', body, re.DOTALL).group(0)
    return re.search(r'<td class="progress">(.*?)</td>', row, re.DOTALL).group(1)


def restart(job, *, steps_done, checkpoint, minute=0, kind="moved", reason="Moved to 2 x v100 by round 12.",
            running=True):
    """What an interruption writes (H2's services): its row and the job's counters."""
    lost = steps_done - checkpoint if running else 0
    JobInterruption.objects.create(job=job, kind=kind, reason=reason, at=T0 + timedelta(minutes=minute),
                                   was_running=running, steps_done=steps_done, resume_step=checkpoint, steps_lost=lost)
    Job.objects.filter(pk=job.pk).update(
        restarts=job.restarts + running, steps_lost=job.steps_lost + lost, checkpoint_step=checkpoint,
        resume_step=checkpoint, current_step=checkpoint, steps_done=max(job.steps_done, steps_done),
    )
    job.refresh_from_db()


def test_a_restarted_job_shows_its_run_best_checkpoint_marker_and_interruptions(browser_for, alice, cluster, submit):
    job = submit(alice, total_steps=5000)
    restart(job, steps_done=900, checkpoint=800, kind="preempted", reason="Preempted for job 9 (priority 5).")
    restart(job, steps_done=1540, checkpoint=1200, minute=7)
    Job.objects.filter(pk=job.pk).update(current_step=1300)

    cell = progress_cell(browser_for, alice, job)

    assert '<span class="steps">1300 / 5000</span>' in cell  # the current run, resumed at 1200
    assert ">best 1540</small>" in cell and ">checkpoint 1200</small>" in cell
    sentence = "2 restarts, 440 steps lost; last checkpoint at step 1200"
    assert (f'<span class="badge restarts" role="img" title="{sentence}" aria-label="{sentence}">↻ 2</span>'
            in cell)
    assert "<summary>Interruptions (2)</summary>" in cell
    items = re.findall(r"<li>(.*?)</li>", cell, re.DOTALL)
    assert items == [
        '<span class="badge kind">moved</span> 2026-12-02 05:08:02 UTC: Moved to 2 x v100 by round 12. '
        "340 steps lost (stopped at 1540, resumed at 1200).",
        '<span class="badge kind">preempted</span> 2026-12-02 05:01:02 UTC: Preempted for job 9 (priority 5). '
        "100 steps lost (stopped at 900, resumed at 800).",
    ]
    assert "The newest" not in cell  # every interruption is listed


def test_a_job_never_interrupted_shows_its_steps_alone(browser_for, alice, cluster, submit):
    job = submit(alice, total_steps=5000)
    Job.objects.filter(pk=job.pk).update(current_step=250, steps_done=250)
    assert progress_cell(browser_for, alice, job) == '<span class="steps">250 / 5000</span>'


def test_one_restart_without_checkpoint_and_a_move_before_start(browser_for, alice, cluster, submit):
    job = submit(alice)  # no total_steps
    restart(job, steps_done=0, checkpoint=0, kind="moved", reason="Moved before it started.", running=False)
    restart(job, steps_done=1, checkpoint=0, minute=1, kind="node_down", reason="Node gpu-a went down: silent.")
    Job.objects.filter(pk=job.pk).update(checkpoint_step=None)

    cell = progress_cell(browser_for, alice, job)

    assert cell.startswith('<span class="steps">0</span> <small class="best"')
    assert 'title="1 restart, 1 step lost; no checkpoint"' in cell and ">↻ 1</span>" in cell
    assert "checkpoint 0" not in cell
    assert "Node gpu-a went down: silent. 1 step lost (stopped at 1, resumed at 0).</li>" in cell
    assert "Moved before it started. Not started: nothing lost.</li>" in cell


def test_only_the_newest_five_are_listed_and_the_rest_counted(browser_for, alice, cluster, submit):
    job = submit(alice, total_steps=5000)
    for minute in range(7):
        restart(job, steps_done=100 * minute + 50, checkpoint=100 * minute, minute=minute)
    cell = progress_cell(browser_for, alice, job)
    assert "<summary>Interruptions (7)</summary>" in cell and len(re.findall("<li>", cell)) == 5
    assert '<p class="note">The newest 5 of 7.</p>' in cell


def test_a_reason_is_text_not_markup(browser_for, alice, cluster, submit):
    job = submit(alice, total_steps=5000)
    restart(job, steps_done=10, checkpoint=0, reason='<img src=x onerror="alert(1)"> & "quoted"')
    cell = progress_cell(browser_for, alice, job)
    assert "<img" not in cell and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt; &amp; &quot;quoted&quot;" in cell
