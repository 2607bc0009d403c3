"""Exploration in the scheduling round (docs/exploration.md, "In the control plane"): a job the
predictions call too slow on every GPU type gets a bounded probe on the most promising type; when
the probe ends it keeps its GPUs if what telemetry measured (through P2) meets its T_min, else it
is preempted with what the probe measured; retries and the GPU budget are respected; with
exploration off, the round behaves as before."""
from datetime import timedelta

import pytest
from django.utils import timezone

from catalog.models import Measurement, PredictionRecord, PredictorVersion, Workload
from scheduler import exploration_round, live, optimizer, services
from scheduler.models import Allocation, Job, JobInterruption, JobMeasurement, SolveRun, SolverConfig

#: The catalog never measured "Drifted"; P1 predicts 3/s on a K80 and 6/s on a V100, both
#: uncertain (log-space sd 0.6): a job asking 8/s is stranded, with a fair chance on a V100
#: (ln(8/6)/0.6 = 0.48 sd away: about 32 %) and a poor one on a K80 (1.6 sd: about 5 %).
P1 = {
    "partners": ["Drifted"], "gpu_types": ["k80", "v100"],
    "configs": [["k80", 1, True], ["v100", 1, True]],
    "rho": [[0.5, 0.5]], "rho_std": [[0.1, 0.1]],
    "tau": [3.0, 6.0], "tau_std": [0.6, 0.6], "low_confidence": True,
}


@pytest.fixture
def drifted(db, cluster, v100, k80):
    workload = Workload.objects.create(name="Drifted", family="Drifted")
    version = PredictorVersion.objects.create(name="p1", architecture="feedforward", weights_file="x.pt",
                                              weights_sha256="0" * 64, status="active")
    PredictionRecord.objects.create(workload=workload, version=version, estimates=P1)
    return workload


def submit(owner, workload, tmin=8.0):
    return services.job_submit(owner=owner, workload=workload, min_throughput=tmin, max_gpus=1).job


def round_now():
    return services.scheduling_round_run(trigger="manual").solve_run


def probe_over(job, *, refined_v100: float, p2: bool = True):
    """The probe's end: telemetry measured `refined_v100` steps/s on the V100 and P2 folded it
    in (the V100 now measured, exact; not yet without `p2`), and the probe's time (and the move
    cool-down) passed."""
    past = timezone.now() - timedelta(seconds=700)
    Job.objects.filter(pk=job.pk).update(probe_until=timezone.now() - timedelta(seconds=1), placed_at=past,
                                         last_probe_at=past)
    Allocation.objects.filter(job=job).update(start=past)
    seen = Measurement.objects.create(workload=job.workload, gpu_type=job.allocations.get().gpu.gpu_type,
                                      throughput=refined_v100, source="telemetry", observed_at=timezone.now())
    JobMeasurement.objects.create(job=job, measurement=seen)
    if p2:
        PredictionRecord.objects.create(
            workload=job.workload, job_id=job.pk, version=PredictorVersion.objects.get(),
            estimates={**P1, "tau": [refined_v100 / 2, refined_v100], "tau_std": [0.6, 0.0], "observed": 1},
        )


def test_a_stranded_job_is_probed_on_the_most_promising_type(drifted, alice):
    job = submit(alice, drifted)
    before = timezone.now()
    run = round_now()
    job.refresh_from_db()
    assert job.state == "placed" and job.probe_gpu_type == "v100" and job.probes == 1
    assert job.allocations.get(end__isnull=True).gpu.gpu_type.name == "v100"
    assert before <= job.last_probe_at <= timezone.now()
    assert abs(job.probe_until - (job.last_probe_at + timedelta(seconds=600))) < timedelta(seconds=5)
    assert job.state_reason.startswith("Probing on v100 until ") and "T_min = 8" in job.state_reason
    assert run.decision["probes"] == [str(job.pk)] and run.decision["stranded"] == [str(job.pk)]
    state = live.job_state(job, allocations=[], observed_throughput=2.0)
    assert state["slo"] == "probe" and state["probe"]["gpu_type"] == "v100"  # a probe is no SLO violation
    assert "Probe 1 on v100 until" in state["probe"]["text"]


def test_a_probe_stays_a_probe_until_it_ends(drifted, alice):
    job = submit(alice, drifted)
    round_now()
    first = Job.objects.get(pk=job.pk)
    round_now()
    job.refresh_from_db()
    assert (job.state, job.probe_gpu_type, job.probe_until, job.probes) == (
        "placed", "v100", first.probe_until, 1)
    assert Allocation.objects.filter(job=job).count() == 1


def test_a_probe_that_measured_enough_keeps_its_gpus(drifted, alice):
    job = submit(alice, drifted)
    round_now()
    held = job.allocations.get()
    probe_over(job, refined_v100=12.0)
    round_now()
    job.refresh_from_db()
    assert job.state == "placed" and job.probe_gpu_type == "" and job.probe_until is None and job.probes == 1
    assert list(job.allocations.filter(end__isnull=True)) == [held]
    assert job.state_reason == "Probe on v100 ended: measured 12 steps/s; it reaches T_min, so the job keeps its GPUs."
    assert not JobInterruption.objects.filter(job=job).exists()


def test_a_probe_that_measured_enough_keeps_its_gpus_before_p2_has_caught_up(drifted, alice):
    job = submit(alice, drifted)
    round_now()
    probe_over(job, refined_v100=9.0, p2=False)  # P1 still says 6/s
    round_now()
    job.refresh_from_db()
    assert job.state == "placed" and job.probe_gpu_type == "" and job.allocations.filter(end__isnull=True).exists()
    assert job.state_reason == "Probe on v100 ended: measured 9 steps/s; it reaches T_min, so the job keeps its GPUs."


def test_a_probe_that_measured_too_little_goes_back_to_pending_with_what_it_measured(drifted, alice):
    job = submit(alice, drifted)
    round_now()
    probe_over(job, refined_v100=6.2)
    run = round_now()
    job.refresh_from_db()
    assert job.state == "pending" and job.probe_gpu_type == "" and job.probe_until is None and job.probes == 1
    assert job.pending_reason.startswith(f"Preempted by solve {run.pk}: Probe on v100 ended: measured 6.2 steps/s, "
                                         "T_min = 8 steps/s.")
    assert not job.allocations.filter(end__isnull=True).exists()
    [stop] = JobInterruption.objects.filter(job=job)
    assert stop.kind == "preempted" and stop.solve_run == run  # the job contract: its checkpoint is kept
    round_now()  # within retry_after_s of its probe: no other one yet, and it says so
    job.refresh_from_db()
    assert job.state == "pending" and job.probes == 1 and "No probe now:" in job.pending_reason


def test_a_probe_that_measured_too_little_where_another_type_serves_moves_there(drifted, alice):
    """The probe on the V100 measured 6.2/s < T_min 8; P2 now puts the K80 at 9/s: the job is
    planned as if pending, not kept where the probe found it too slow by the keep-work rules
    (here the move cool-down, which began with the probe)."""
    job = submit(alice, drifted)
    round_now()
    probe_over(job, refined_v100=6.2, p2=False)
    PredictionRecord.objects.create(workload=job.workload, job_id=job.pk, version=PredictorVersion.objects.get(),
                                    estimates={**P1, "tau": [9.0, 6.2], "tau_std": [0.0, 0.0], "observed": 1})
    # placed as the probe began: probe_s (600 s) is the move cool-down, which still pins it
    started = timezone.now() - timedelta(seconds=590)
    Job.objects.filter(pk=job.pk).update(state="running", started_at=started, placed_at=started)
    run = round_now()
    job.refresh_from_db()
    assert job.probe_gpu_type == "" and job.probes == 1
    assert job.allocations.get(end__isnull=True).gpu.gpu_type.name == "k80"
    [move] = JobInterruption.objects.filter(job=job)
    assert move.kind == "moved" and move.solve_run == run


def test_the_probe_budget_and_the_probes_per_job_are_respected(drifted, alice, settings):
    first, second = submit(alice, drifted), submit(alice, drifted)
    round_now()  # 6 GPUs, a tenth probing at once: at least one GPU, one probe
    probing = Job.objects.filter(pk__in=[first.pk, second.pk]).exclude(probe_gpu_type="")
    assert probing.count() == 1
    waiting = Job.objects.get(pk__in=[first.pk, second.pk], probe_gpu_type="")
    assert waiting.state == "pending" and "No probe now:" in waiting.pending_reason and waiting.probes == 0
    settings.GOGH_EXPLORATION_MAX_PROBES_PER_JOB = 1
    Job.objects.filter(pk=waiting.pk).update(probes=1, last_probe_at=timezone.now() - timedelta(days=1))
    Job.objects.filter(pk=probing.get().pk).update(probe_until=timezone.now() - timedelta(seconds=1))
    round_now()
    waiting.refresh_from_db()
    assert waiting.probe_gpu_type == "" and waiting.probes == 1 and waiting.state == "pending"


def test_with_exploration_off_a_stranded_job_waits_as_before(drifted, alice, settings):
    settings.GOGH_EXPLORATION_ENABLED = False
    job = submit(alice, drifted)
    run = round_now()
    job.refresh_from_db()
    assert job.state == "pending" and job.probes == 0 and job.probe_gpu_type == ""
    assert job.pending_reason.startswith("No GPU type reaches T_min = 8") and "probe" not in job.pending_reason
    assert run.decision["stranded"] == [str(job.pk)] and run.decision["probes"] == []


def test_dry_runs_start_no_probe(drifted, alice):
    job = submit(alice, drifted)
    run = services.scheduling_round_run(trigger="manual", dry_run=True).solve_run
    job.refresh_from_db()
    assert str(job.pk) in run.decision["placements"] and job.probes == 0 and job.probe_gpu_type == ""
    assert SolveRun.objects.count() == 1


def test_a_job_that_needs_the_probes_gpus_preempts_it(drifted, alice, resnet50, v100, k80):
    probe = submit(alice, drifted)
    round_now()
    for gpu_type, tau in ((v100, 10.0), (k80, 4.0)):
        Measurement.objects.create(workload=resnet50, gpu_type=gpu_type, throughput=tau, source="reference",
                                   observed_at=timezone.now())
    served = [submit(alice, resnet50) for _ in range(4)]  # 8/s: every V100
    run = round_now()
    probe.refresh_from_db()
    assert all(Job.objects.get(pk=job.pk).state == "placed" for job in served)
    assert probe.state == "pending" and probe.pending_reason.startswith(f"Preempted by solve {run.pk}:")
    assert probe.probe_gpu_type == "" and probe.probe_until is None and probe.probes == 1
    assert JobInterruption.objects.get(job=probe).kind == "preempted"


def test_turning_exploration_off_ends_the_running_probes(drifted, alice, settings):
    job = submit(alice, drifted)
    round_now()
    settings.GOGH_EXPLORATION_ENABLED = False
    Job.objects.filter(pk=job.pk).update(placed_at=timezone.now() - timedelta(seconds=700))
    run = round_now()
    job.refresh_from_db()
    assert job.state == "pending" and job.probe_gpu_type == "" and job.probes == 1
    assert job.pending_reason == (f"Preempted by solve {run.pk}: Probe on v100 ended: nothing measured, T_min = 8 "
                                  "steps/s. Not enough: the best prediction is 6 steps/s on 1 x v100.")


def test_shadow_mode_starts_no_probe(drifted, alice):
    config = SolverConfig.load()
    config.shadow_mode = True
    config.save()
    job = submit(alice, drifted)
    run = round_now()
    job.refresh_from_db()
    assert run.shadow and run.decision["probes"] == [str(job.pk)]
    assert job.state == "pending" and job.probes == 0 and job.probe_gpu_type == ""


def test_telemetry_far_from_the_catalog_makes_a_workload_disagreed(db, resnet50, lm, v100, k80):
    now = timezone.now()
    for workload, gpu_type, tau, source in (
        (resnet50, v100, 10.0, "reference"), (resnet50, v100, 16.0, "telemetry"),  # 1.6x on V100
        (resnet50, k80, 4.0, "reference"), (resnet50, k80, 4.4, "telemetry"),
        (lm, v100, 30.0, "reference"), (lm, v100, 21.0, "telemetry"),  # 0.7x: within 1.5x
    ):
        Measurement.objects.create(workload=workload, gpu_type=gpu_type, throughput=tau, source=source,
                                   observed_at=now)
    assert exploration_round.disagreed_workloads({resnet50.name, lm.name}) == {resnet50.name}
    version = PredictorVersion.objects.create(name="p2", architecture="feedforward", weights_file="x.pt",
                                              weights_sha256="0" * 64, status="active")
    PredictionRecord.objects.create(workload=lm, version=version, estimates={  # P2, no telemetry row on K80
        **P1, "partners": [lm.name], "tau": [9.0, 21.0], "observed": 3})
    Measurement.objects.create(workload=lm, gpu_type=k80, throughput=20.0, source="reference", observed_at=now)
    assert exploration_round.disagreed_workloads({resnet50.name, lm.name}) == {resnet50.name, lm.name}


def test_a_probe_moved_by_a_round_goes_on_probing(drifted, alice, cluster):
    job = submit(alice, drifted)
    round_now()
    before = Job.objects.get(pk=job.pk)
    held = job.allocations.get().gpu
    other = next(gpu for gpu in cluster if gpu.gpu_type_id == held.gpu_type_id and gpu != held)
    move = optimizer.Plan(solver="ilp", reasons={}, power_w=300, objective=0, status="optimal", energy_weight=1,
                          load=0, placements={str(job.pk): optimizer.Placement(
                              job_id=str(job.pk), gpu_type="v100", gpu_ids=(str(other.pk),), consolidated=True,
                              partners=(), predicted_throughput=6.0, predicted_power_w=300)})
    services._apply(move, SolveRun.objects.create(trigger="manual", solver="ilp"), timezone.now(),
                    exploration_round.RoundExploration())  # what a round whose probe goes on passes
    job.refresh_from_db()
    assert job.allocations.get(end__isnull=True).gpu == other and job.state == "placed"
    assert (job.probe_gpu_type, job.probe_until, job.probes) == ("v100", before.probe_until, 1)
