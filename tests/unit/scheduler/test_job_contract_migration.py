"""Migration 0012: jobs from before the job contract ran once, from step 0, so their current run
is where their best is; they have no checkpoint, no restart and lost nothing."""
import pytest

from tests.unit.migrating import migrate_to, migrate_to_newest

BEFORE = ("scheduler", "0011_job_measurement")
AFTER = ("scheduler", "0012_job_contract")


@pytest.mark.django_db(transaction=True)
def test_existing_jobs_current_run_is_at_their_best_and_nothing_was_lost():
    old = migrate_to(BEFORE)
    Job, Tenant = old.get_model("scheduler", "Job"), old.get_model("scheduler", "Tenant")
    User = old.get_model("auth", "User")
    owner, tenant = User.objects.create(username="u"), Tenant.objects.create(name="t", slug="t")
    workload = old.get_model("catalog", "Workload").objects.create(name="w")
    steps = {"running": 40, "succeeded": 500, "pending": 0}
    ids = {
        state: Job.objects.create(
            owner=owner, tenant=tenant, workload=workload, min_throughput=1, max_gpus=1, state=state,
            steps_done=done, pending_reason="waiting" if state == "pending" else "",
        ).pk
        for state, done in steps.items()
    }

    new = migrate_to(AFTER)
    jobs = {job.pk: job for job in new.get_model("scheduler", "Job").objects.all()}
    for state, pk in ids.items():
        job = jobs[pk]
        assert (job.current_step, job.steps_done) == (steps[state], steps[state]), state
        assert (job.resume_step, job.restarts, job.steps_lost, job.checkpoint_step) == (0, 0, 0, None), state
    migrate_to_newest()  # as the other tests expect
