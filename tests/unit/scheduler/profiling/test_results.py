"""A campaign job's reports: its GOGH_MEASUREMENT lines become profiling measurements on its
placement's GPU type, or failures of their cases (oom is both); bad lines are failures with the
reason, never a 500 and never half stored; the campaign ends when every case is settled."""
import json

import pytest

from catalog.models import Measurement
from gogh_web.outbox.models import OutboxMessage
from scheduler.dispatch.progress import job_progress_report
from scheduler.models import Job, JobMeasurement, ProfilingCampaign, SolverConfig
from scheduler.problem_source import problem_from_database
from scheduler.profiling.services import campaign_start
from scheduler.services import job_cancel, job_submit
from tests.unit.telemetry.jobs import placed_job

from .conftest import LM, MISSING, PAIR, R50, place

pytestmark = pytest.mark.django_db


def line(case=R50, **fields) -> str:
    body = {"case": case, "workload": case.split(" + ")[0].split(" x")[0], "num_gpus": 1, "consolidated": True,
            "partner": None, "throughput": 12.5, "partner_throughput": None, "power_w": 210.0, "utilization": 0.93,
            "memory_gb": 5.1, "ci_low": 12.1, "ci_high": 12.9, "steps_timed": 300, "suite_version": "1", **fields}
    return json.dumps(body)


@pytest.fixture
def campaign(fake_suite, catalog, v100_node, v100):
    return campaign_start(gpu_type=v100, trigger="admin")


@pytest.fixture
def job(campaign, v100_node):
    """The campaign's 1-GPU job (R50, LM, PAIR), placed on one V100."""
    return place(Job.objects.filter(campaign=campaign, max_gpus=1).get(), v100_node)


def report(client, job, lines, status="running", steps=0, **fields):
    body = {"job": job.pk, "status": status, "steps": steps, "measurements": lines, **fields}
    answer = client.post("/api/telemetry/job-progress/", body, format="json")
    assert answer.status_code == 200, answer.content
    return answer


def fresh(campaign) -> ProfilingCampaign:
    return ProfilingCampaign.objects.get(pk=campaign.pk)


def test_a_measured_case_is_a_profiling_measurement_of_the_placements_type(job, campaign, agent, client_for, v100):
    report(client_for(agent), job, [line()], steps=1, steps_per_s=0.05)
    measurement = Measurement.objects.get()
    assert (measurement.source, measurement.reference) == ("profiling", f"gogh-suite/1/{R50}")
    assert (measurement.workload.name, measurement.gpu_type, measurement.num_gpus, measurement.partner) == (
        R50, v100, 1, None)
    assert (measurement.throughput, measurement.power_w, measurement.utilization, measurement.memory_gb) == (
        12.5, 210.0, 0.93, 5.1)
    assert not JobMeasurement.objects.exists()  # its rate (cases per second) is no telemetry of its workload
    campaign = fresh(campaign)
    assert (campaign.state, campaign.cases_done) == ("running", [R50])
    assert campaign.started_at is not None
    assert Job.objects.get(pk=job.pk).state == "running"


def test_a_pair_keeps_its_partner_and_an_oom_is_a_zero_and_a_failure(job, campaign, agent, client_for):
    report(client_for(agent), job, [
        line(PAIR, partner=LM, partner_throughput=20.0),
        line(LM, throughput=None, error="oom", message="CUDA out of memory at batch 20", power_w=None),
    ])
    pair = Measurement.objects.get(partner__name=LM)
    assert (pair.workload.name, pair.partner_throughput) == (R50, 20.0)
    oom = Measurement.objects.get(workload__name=LM)
    assert oom.throughput == 0 and oom.source == "profiling"
    campaign = fresh(campaign)
    assert campaign.cases_done == [PAIR]
    assert campaign.failures[-1] == {"case": LM, "kind": "oom", "message": "CUDA out of memory at batch 20"}


def test_an_error_or_timeout_is_a_failure_and_no_measurement(job, campaign, agent, client_for):
    report(client_for(agent), job, [line(throughput=None, error="timeout", message="no stable rate in 600 s")])
    assert not Measurement.objects.exists()
    assert fresh(campaign).failures[-1] == {"case": R50, "kind": "timeout", "message": "no stable rate in 600 s"}


@pytest.mark.parametrize(("text", "case", "reason"), [
    (line(workload="Nope (batch size 1)"), R50, "unknown workload 'Nope (batch size 1)'"),
    ('{"case": "ResNet-50 (batch size 64)", "throughput": 1', R50, "not JSON"),
    ("[1, 2]", "", "not a JSON object"),
    (line(num_gpus="1"), R50, "num_gpus must be an integer >= 1, not '1'"),
    (line(throughput="fast"), R50, "throughput must be a finite number >= 0 or null, not 'fast'"),
    (line(utilization=1.5), R50, "utilization must lie within 0..1, not 1.5"),
    (line(num_gpus=2), R50, "num_gpus 2: the job holds 1 GPU(s)"),
    (line(power_w=9000.0), R50, "power_w: 9000 W is above 2000 W per GPU (1 GPU)"),
    (line(f"{LM} x2", num_gpus=2), "", "case 'LM (batch size 20) x2' is not one of this job's"),
    (line(error="segfault"), R50, "error must be one of oom, error, timeout, not 'segfault'"),
])
def test_a_bad_line_is_its_cases_failure_with_the_reason(job, campaign, agent, client_for, text, case, reason):
    report(client_for(agent), job, [text])
    assert not Measurement.objects.exists()
    [failure] = [f for f in fresh(campaign).failures if f["case"] != MISSING]
    assert failure["case"] == case and failure["kind"] == "error"
    assert failure["message"].startswith(f"Bad GOGH_MEASUREMENT line: {reason}")


def test_a_case_keeps_its_first_result(job, campaign, agent, client_for):
    """A preempted job runs its cases again: the second result of a case is not stored."""
    report(client_for(agent), job, [line()])
    report(client_for(agent), job, [line(throughput=99.0), line(workload="Nope")])
    assert list(Measurement.objects.values_list("throughput", flat=True)) == [12.5]
    assert fresh(campaign).cases_done == [R50] and len(fresh(campaign).failures) == 1  # MISSING only


def test_lines_of_a_job_outside_a_campaign_are_ignored(v100_node, agent, alice, client_for, resnet50):
    job = placed_job(alice, resnet50, list(v100_node.gpus.all())[:1])
    report(client_for(agent), job, [line()])
    assert not Measurement.objects.filter(source="profiling").exists()


def test_the_campaign_is_done_when_every_case_is_settled(job, campaign, agent, client_for, v100, v100_node):
    report(client_for(agent), job, [line(), line(LM), line(PAIR, partner=LM)], status="succeeded", steps=3,
           exit_code=0)
    assert fresh(campaign).state == "running"  # the 2-GPU job has not run yet
    other = place(Job.objects.get(campaign=campaign, max_gpus=2), v100_node)
    report(client_for(agent), other, [line(f"{LM} x2", num_gpus=2), line(f"{R50} x2", num_gpus=2, error="oom",
                                                                          throughput=0, message="OOM")])
    campaign = fresh(campaign)
    assert campaign.state == "done" and campaign.finished_at is not None
    assert campaign.cases_done == [R50, LM, PAIR, f"{LM} x2"]
    assert {f["case"]: f["kind"] for f in campaign.failures} == {MISSING: "error", f"{R50} x2": "oom"}
    assert campaign.message == "4 of 6 cases measured, 2 failed"
    v100.refresh_from_db()
    assert v100.profiled_at == campaign.finished_at
    assert (v100.profiled_suite_version, v100.profiled_driver_version) == ("1", "")
    assert OutboxMessage.objects.filter(task="catalog.tasks.predictor_retrain_if_due").exists()
    assert Measurement.objects.filter(source="profiling").count() == 5  # 4 measured + the oom


def test_a_job_that_ends_without_results_fails_its_cases_and_nothing_measured_fails_the_campaign(
        job, campaign, agent, client_for, v100, staff):
    report(client_for(agent), job, [], status="failed", steps=0, exit_code=1, message="ImportError: torch")
    failures = {f["case"]: f["message"] for f in fresh(campaign).failures}
    assert failures[PAIR] == "The job ended (failed: ImportError: torch) without a result for this case."
    job_cancel(job=Job.objects.get(campaign=campaign, max_gpus=2), by=staff)
    campaign = fresh(campaign)
    assert campaign.state == "failed" and len(campaign.failures) == 6
    v100.refresh_from_db()
    assert v100.profiled_at is None
    assert not OutboxMessage.objects.filter(task="catalog.tasks.predictor_retrain_if_due").exists()


def test_a_report_on_a_closed_campaign_changes_nothing(job, campaign, agent):
    ProfilingCampaign.objects.filter(pk=campaign.pk).update(state="cancelled")
    job_progress_report(agent_user=agent, job_id=job.pk, status="running", steps=0, measurements=[line()])
    assert not Measurement.objects.exists() and fresh(campaign).cases_done == []


def test_too_many_lines_or_a_too_long_one_is_refused_on_the_wire(job, agent, client_for):
    client = client_for(agent)
    body = {"job": job.pk, "status": "running", "steps": 0}
    answer = client.post("/api/telemetry/job-progress/", {**body, "measurements": ["{}"] * 101}, format="json")
    assert answer.status_code == 400 and "measurements" in answer.json()
    answer = client.post("/api/telemetry/job-progress/", {**body, "measurements": ["x" * 4001]}, format="json")
    assert answer.status_code == 400
    assert not Measurement.objects.exists()


def test_campaign_jobs_are_probes_of_their_type_in_a_rounds_problem(campaign, alice, resnet50):
    user_job = job_submit(owner=alice, workload=resnet50, min_throughput=1.0, max_gpus=1).job
    specs = {spec.id: spec for spec in problem_from_database(SolverConfig.load()).jobs}
    campaign_ids = [str(pk) for pk in Job.objects.filter(campaign=campaign).order_by("pk").values_list("pk", flat=True)]
    assert len(campaign_ids) == 2
    for job_id in campaign_ids:
        assert (specs[job_id].probe, specs[job_id].only_gpu_type) == (True, "v100")
    assert specs[str(user_job.pk)].probe is False
    assert [specs[job_id].max_gpus for job_id in campaign_ids] == [1, 2]
