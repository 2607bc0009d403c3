"""Rounds plan with measured numbers first and the learned predictors' estimates where nothing
was measured; shadow mode records decisions without dispatching."""
import pytest
from django.utils import timezone

from catalog.measurement_record import MeasurementRecord
from catalog.models import Measurement, PredictionRecord, PredictorVersion, Workload
from catalog.predictors.power_limits import default_model
from gogh_web.outbox.models import OutboxMessage
from scheduler import services
from scheduler.models import Allocation, Job, SolverConfig
from scheduler.optimizer.catalog_predictions import CatalogPredictions
from scheduler.predictions import LearnedPredictions, WorkloadEstimates
from scheduler.problem_source import problem_from_database
from tests.unit.gogh_web.broker import broker as broker  # a fixture, `as` marks it re-exported

ESTIMATES = {
    "partners": ["ResNet-50", "LM"], "gpu_types": ["k80", "v100"],
    "configs": [["k80", 1, True], ["v100", 1, True], ["v100", 2, True]],
    "rho": [[0.5, 0.8], [1.4, -0.2]], "rho_std": [[0.1, 0.1], [0.1, 0.1]],
    "tau": [3.0, 12.0, 0.0], "tau_std": [0.2, 0.2, 0.2], "low_confidence": True,
}


def test_before_any_observation_measured_numbers_win_and_p1_fills_the_gaps():
    measured = CatalogPredictions([MeasurementRecord(workload="New", gpu_type="v100", throughput=9.0)])
    learned = LearnedPredictions(measured, {"New": WorkloadEstimates.from_record(ESTIMATES)})
    assert learned.tau("New", "v100", 1, True) == 9.0
    assert learned.tau("New", "k80", 1, True) == 3.0
    assert learned.tau("New", "v100", 2, True) is None  # predicted 0: does not fit, never planned on
    assert learned.tau("New", "p100", 1, True) is None
    assert learned.tau("Other", "k80", 1, True) is None
    assert learned.rho("New", "ResNet-50", "v100") == 0.8
    assert learned.rho("New", "LM", "k80") == 1.0 and learned.rho("New", "LM", "v100") == 0.0  # clipped to [0, 1]
    assert learned.rho("New", "A3C", "v100") is None


def test_once_observed_p2_wins_where_it_speaks_and_measurements_fill_the_rest():
    measured = CatalogPredictions([
        MeasurementRecord(workload="New", gpu_type="v100", throughput=9.0),
        MeasurementRecord(workload="New", gpu_type="p100", throughput=6.0),
        MeasurementRecord(workload="New", gpu_type="v100", partner="LM", throughput=4.5),
    ])
    refined = WorkloadEstimates.from_record({**ESTIMATES, "observed": 2})
    learned = LearnedPredictions(measured, {"New": refined})
    assert learned.tau("New", "v100", 1, True) == 12.0  # P2's value, not the reference's 9
    assert learned.tau("New", "p100", 1, True) == 6.0  # P2 says nothing about p100
    assert learned.rho("New", "LM", "v100") == 0.0 and learned.rho("New", "ResNet-50", "v100") == 0.8


def _version():
    return PredictorVersion.objects.create(name="p1", architecture="feedforward", weights_file="x.pt",
                                           weights_sha256="0" * 64, status="active")


@pytest.fixture
def unmeasured(db, cluster, v100, k80):
    """A workload the catalog has never measured, with a stored P1 prediction."""
    workload = Workload.objects.create(name="New", family="New")
    PredictionRecord.objects.create(workload=workload, version=_version(), estimates=ESTIMATES)
    return workload


def test_round_places_a_never_measured_workload_by_its_prediction(unmeasured, alice):
    # T_min 2.4: P1's 3.0 on k80 (log-sd 0.2) may be counted on for 3.0 e^-0.2 = 2.46 (the margin
    # on unmeasured configurations, docs/optimization.md); 2.5 goes to v100.
    job = services.job_submit(owner=alice, workload=unmeasured, min_throughput=2.4, max_gpus=1).job
    services.scheduling_round_run(trigger="manual")
    job.refresh_from_db()
    assert job.state == "placed"
    allocation = Allocation.objects.get(job=job)
    assert allocation.gpu.gpu_type.name == "k80"
    assert allocation.predicted_throughput == pytest.approx(3.0 * _speed_at("k80", allocation.power_limit_w))


def test_without_measurement_or_prediction_the_job_waits_with_a_reason(db, cluster, alice):
    job = services.job_submit(owner=alice, workload=Workload.objects.create(name="Unknown", family="X"),
                              min_throughput=1, max_gpus=1).job
    services.scheduling_round_run(trigger="manual")
    job.refresh_from_db()
    assert job.state == "pending" and job.pending_reason


def test_newest_prediction_is_used_and_shadow_ones_only_in_shadow_mode(unmeasured, alice):
    refined = {**ESTIMATES, "tau": [2.0, 13.0, 0.0]}
    PredictionRecord.objects.create(workload=unmeasured, version=PredictorVersion.objects.get(), estimates=refined)
    services.job_submit(owner=alice, workload=unmeasured, min_throughput=1, max_gpus=1)
    shadowed = {**ESTIMATES, "tau": [7.0, 14.0, 0.0]}
    PredictionRecord.objects.create(workload=unmeasured, version=PredictorVersion.objects.get(), estimates=shadowed,
                                    shadow=True)
    config = SolverConfig.load()
    assert problem_from_database(config).predictions.tau("New", "k80", 1, True) == 2.0
    config.shadow_mode = True
    assert problem_from_database(config).predictions.tau("New", "k80", 1, True) == 7.0


def test_shadow_mode_records_the_decision_and_dispatches_nothing(unmeasured, alice):
    # Power limits off: the decision shows P1's throughput at the default limit.
    SolverConfig.objects.filter(pk=SolverConfig.load().pk).update(shadow_mode=True, power_limits=False)
    job = services.job_submit(owner=alice, workload=unmeasured, min_throughput=2.4, max_gpus=1).job
    run = services.scheduling_round_run(trigger="manual").solve_run
    job.refresh_from_db()
    assert run.shadow and not Allocation.objects.exists()
    assert job.state == "pending" and job.pending_reason == services.SHADOW_REASON
    placement = run.decision["placements"][str(job.pk)]
    assert len(placement["gpu_ids"]) == 1 and placement["predicted_throughput"] == 3.0


def _speed_at(gpu_type: str, limit_w: float | None) -> float:
    """P1's throughput is at the default limit; the round may choose a lower one (docs/power_limits.md)."""
    return 1.0 if limit_w is None else default_model().at_power_limit("New", gpu_type, limit_w)[0]


def test_every_round_keeps_its_decision(unmeasured, alice):
    job = services.job_submit(owner=alice, workload=unmeasured, min_throughput=2.5, max_gpus=1).job
    hopeless = services.job_submit(owner=alice, workload=unmeasured, min_throughput=99, max_gpus=1).job
    run = services.scheduling_round_run(trigger="manual").solve_run
    assert not run.shadow and set(run.decision["placements"]) == {str(job.pk)}
    assert run.decision["reasons"][str(hopeless.pk)] == Job.objects.get(pk=hopeless.pk).pending_reason


def test_submission_sends_p1_after_commit(db, cluster, alice, resnet50, broker, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        job = services.job_submit(owner=alice, workload=resnet50, min_throughput=1, max_gpus=1).job
    assert broker.of("scheduler.tasks.job_predict") == [([job.pk], {}, None)]


def test_job_predict_without_a_trained_predictor_leaves_planning_to_measurements(db, cluster, alice, resnet50):
    job = services.job_submit(owner=alice, workload=resnet50, min_throughput=1, max_gpus=1).job
    assert services.job_predict(job=job) is None and not PredictionRecord.objects.exists()


def test_telemetry_measurement_is_sent_to_p2(unmeasured, alice, agent, broker, django_capture_on_commit_callbacks):
    from scheduler.dispatch.progress import job_progress_report

    job = services.job_submit(owner=alice, workload=unmeasured, min_throughput=2.5, max_gpus=1).job
    services.scheduling_round_run(trigger="manual")
    gpu = Allocation.objects.get(job=job).gpu
    gpu.node.agent = agent
    gpu.node.save()
    with django_capture_on_commit_callbacks(execute=True):
        job_progress_report(agent_user=agent, job_id=job.pk, status="running", steps=10, steps_per_s=2.9,
                            now=timezone.now())
    measurement = Measurement.objects.get(source="telemetry")
    # placed below its default limit: recorded at the default, by the speed learnt there with it
    allocation = Allocation.objects.get(job=job)
    speed = _learnt_with(allocation.gpu.gpu_type, allocation.power_limit_w, 2.9)
    assert speed < 1 and measurement.throughput == pytest.approx(2.9 / speed)
    assert broker.of("catalog.tasks.prediction_refine") == [([measurement.pk, job.pk], {}, None)]


def test_job_predict_stores_p1_and_asks_for_a_round(db, alice, settings, tmp_path, monkeypatch):
    from catalog.services.predictors import predictor_train
    from tests.unit.catalog.predictors.conftest import TINY
    from tests.unit.catalog.predictors.db_slice import load_slice

    settings.VAR_DIR = tmp_path
    workloads, _ = load_slice()
    predictor_train(architecture="feedforward", hyperparameters=TINY)
    rounds = []
    monkeypatch.setattr(services, "scheduling_round_request", lambda trigger: rounds.append(trigger))
    job = services.job_submit(owner=alice, workload=workloads["A3C"], min_throughput=1, max_gpus=1).job
    record = services.job_predict(job=job)
    assert record.job_id == job.pk and not record.shadow and record.observations == []
    assert set(record.estimates["gpu_types"]) == {"k80", "p100", "v100"} and rounds[-1] == "prediction"
    assert all(t > 0 for t in record.estimates["tau"][:3])


def test_measured_numbers_follow_the_catalog_policy(unmeasured, v100, k80, settings):
    """Telemetry alone counts from GOGH_PREDICTOR_MIN_SAMPLES records on; an outlier is dropped;
    a reference record is trusted alone."""
    from catalog.predictors.data import CatalogPolicy
    from scheduler.problem_source import catalog_predictions

    settings.GOGH_PREDICTOR_MIN_SAMPLES = 3
    settings.GOGH_PREDICTOR_WINDOW = 6
    now = timezone.now()

    def measure(gpu_type, throughput, source="telemetry", seconds=0):
        Measurement.objects.create(workload=unmeasured, gpu_type=gpu_type, throughput=throughput, source=source,
                                   observed_at=now - timezone.timedelta(seconds=seconds))

    measure(k80, 2.0, seconds=60)
    measure(k80, 2.2, seconds=50)
    assert catalog_predictions().tau("New", "k80", 1, True) is None  # two telemetry records: still unknown
    measure(k80, 2.4, seconds=40)
    assert catalog_predictions().tau("New", "k80", 1, True) == pytest.approx(2.2)
    for seconds, value in ((30, 2.1), (20, 2.3), (10, 2.2), (0, 40.0)):  # 40: an outlier
        measure(k80, value, seconds=seconds)
    # the window keeps the newest 6 (2.0, the oldest, drops out); the outlier is rejected
    assert catalog_predictions().tau("New", "k80", 1, True) == pytest.approx((2.2 + 2.4 + 2.1 + 2.3 + 2.2) / 5)
    measure(v100, 9.0, source="reference", seconds=10**6)
    assert catalog_predictions().tau("New", "v100", 1, True) == 9.0
    assert CatalogPolicy().min_samples == 3  # the documented default the setting mirrors


def test_memory_need_steers_placement_and_leaves_jobs_that_fit_nowhere_pending(cluster, alice, lm, k80, v100):
    """LM on K80 would be cheapest, but 14 GB only fits a V100 (16 GB; K80: 12 GB)."""
    for gpu_type, tau in ((v100, 30.0), (k80, 20.0)):
        Measurement.objects.create(workload=lm, gpu_type=gpu_type, throughput=tau, source="reference",
                                   observed_at=timezone.now())
    big = services.job_submit(owner=alice, workload=lm, min_throughput=15, max_gpus=1, memory_gb=14).job
    services.scheduling_round_run(trigger="manual")
    assert Allocation.objects.get(job=big).gpu.gpu_type.name == "v100"
    Measurement.objects.create(workload=lm, gpu_type=k80, throughput=20, memory_gb=18, source="telemetry",
                               observed_at=timezone.now())  # seen using 18 GB: no GPU here has that much
    unstated = services.job_submit(owner=alice, workload=lm, min_throughput=15, max_gpus=1).job
    services.scheduling_round_run(trigger="manual")
    unstated.refresh_from_db()
    assert unstated.state == "pending" and "18 GB of GPU memory" in unstated.pending_reason


def test_memory_need_is_the_peak_of_the_catalog_window(cluster, alice, lm, k80, v100, settings):
    """One high reading holds a workload off GPUs only until the configuration's newest
    GOGH_PREDICTOR_WINDOW records (with a memory reading or not) no longer include it."""
    from scheduler.problem_source import planning_predictions

    settings.GOGH_PREDICTOR_WINDOW = 3
    now = timezone.now()

    def measure(seconds_ago, memory_gb, gpu_type=k80, partner=None):
        Measurement.objects.create(workload=lm, gpu_type=gpu_type, throughput=20, memory_gb=memory_gb,
                                   partner=partner, source="telemetry",
                                   observed_at=now - timezone.timedelta(seconds=seconds_ago))

    def need():
        return planning_predictions({lm.name}).memory_gb(lm.name)

    measure(100, 18.0)  # a spike no GPU here can hold
    measure(90, 6.0)
    measure(80, 20.0, partner=lm)  # a shared GPU's reading is both jobs': never the need
    job = services.job_submit(owner=alice, workload=lm, min_throughput=15, max_gpus=1).job
    services.scheduling_round_run(trigger="manual")
    job.refresh_from_db()
    assert need() == 18.0
    assert job.state == "pending" and "18 GB of GPU memory" in job.pending_reason
    measure(70, None)  # no memory reading, still a newer record of the configuration
    measure(60, 6.5, gpu_type=v100)  # another configuration's window: the k80 spike stays
    assert need() == 18.0
    measure(50, 7.0)  # the third newer k80 record: the spike leaves the window
    assert need() == 7.0
    services.scheduling_round_run(trigger="manual")
    job.refresh_from_db()
    assert job.state != "pending" and Allocation.objects.filter(job=job).exists()


def test_gpu_types_nobody_measured_get_spec_estimates_and_observations_replace_them(db, alice, settings, tmp_path):
    from catalog.models import GpuType
    from catalog.services.predictors import prediction_create, predictor_train
    from tests.unit.catalog.predictors.conftest import TINY
    from tests.unit.catalog.predictors.db_slice import load_slice

    settings.VAR_DIR = tmp_path
    workloads, _ = load_slice()
    predictor_train(architecture="feedforward", hyperparameters=TINY)
    GpuType.objects.create(name="a100", memory_gb=40, tdp_w=400, idle_w=50, power_curve=[[0, 50], [1, 400]])
    GpuType.objects.create(name="x9", memory_gb=8, tdp_w=100, idle_w=10, power_curve=[[0, 10], [1, 100]])  # no specs
    a3c = workloads["A3C"]
    estimates = prediction_create(workload=a3c).estimates
    assert estimates["unmeasured_gpu_types"] == ["a100"] and "x9" not in estimates["gpu_types"]
    a100 = estimates["configs"].index(["a100", 1, True])
    assert estimates["tau"][a100] > 0 and estimates["tau_std"][a100] >= 0.5  # a guess, and says so
    assert all(len(row) == len(estimates["gpu_types"]) for row in estimates["rho"])
    seen = {"gpu_type": "a100", "throughput": 123.0, "partner": None, "partner_throughput": None, "num_gpus": 1,
            "consolidated": True}
    refined = prediction_create(workload=a3c, observations=[seen]).estimates
    assert refined["tau"][a100] == 123.0 and refined["tau_std"][a100] == 0.0
    learned = LearnedPredictions(CatalogPredictions([]), {"A3C": WorkloadEstimates.from_record(refined)})
    assert learned.tau("A3C", "a100", 1, True) == 123.0 and refined["observed"] == 1


def test_reconciliation_asks_p1_again_for_a_job_whose_request_was_lost(unmeasured, alice, broker,
                                                                         django_capture_on_commit_callbacks):
    mystery = services.job_submit(owner=alice, workload=Workload.objects.create(name="Mystery", family="X"),
                                  min_throughput=1, max_gpus=1).job
    OutboxMessage.objects.filter(key=services.p1_key(mystery.pk)).delete()  # lost on the way
    with django_capture_on_commit_callbacks(execute=True):
        services.scheduling_round_run(trigger="manual")
        services.predictions_reconcile()
    assert broker.of("scheduler.tasks.job_predict") == [([mystery.pk], {}, None)]  # the reconciliation, not the round
    PredictionRecord.objects.create(  # P1 came: fits nowhere
        workload=mystery.workload, job_id=mystery.pk, version=PredictorVersion.objects.get(),
        estimates={**ESTIMATES, "tau": [0.0, 0.0, 0.0]},
    )
    services.outbox_acknowledge(key=services.p1_key(mystery.pk))
    with django_capture_on_commit_callbacks(execute=True):
        services.predictions_reconcile()
    assert len(broker.of("scheduler.tasks.job_predict")) == 1


def test_without_a_trained_predictor_nothing_asks_for_p1_again(db, cluster, alice, broker,
                                                               django_capture_on_commit_callbacks):
    services.job_submit(owner=alice, workload=Workload.objects.create(name="Mystery", family="X"),
                        min_throughput=1, max_gpus=1)
    OutboxMessage.objects.all().delete()
    with django_capture_on_commit_callbacks(execute=True):
        services.scheduling_round_run(trigger="manual")
        assert services.predictions_reconcile() == 0
    assert broker.of("scheduler.tasks.job_predict") == []


def test_p2_refines_the_jobs_own_record_and_is_live(db, settings, tmp_path):
    from catalog.services.predictors import prediction_create, prediction_refine, predictor_train
    from tests.unit.catalog.predictors.conftest import TINY
    from tests.unit.catalog.predictors.db_slice import load_slice

    settings.VAR_DIR = tmp_path
    workloads, types = load_slice()
    predictor_train(architecture="feedforward", hyperparameters=TINY)
    a3c = workloads["A3C"]
    other = prediction_create(workload=a3c, job_id=1)  # another job of the same workload
    shadowed = prediction_create(workload=a3c, job_id=2, shadow=True)  # submitted in shadow mode

    def seen(throughput):
        return Measurement.objects.create(workload=a3c, gpu_type=types["v100"], throughput=throughput,
                                          source="telemetry", observed_at=timezone.now())

    fresh = prediction_refine(measurement=seen(3.0), job_id=3)  # no record yet: P1 plus what was seen
    assert fresh.job_id == 3 and [o["throughput"] for o in fresh.observations] == [3.0]
    again = prediction_refine(measurement=seen(3.2), job_id=3)
    assert [o["throughput"] for o in again.observations] == [3.0, 3.2]
    live = prediction_refine(measurement=seen(2.0), job_id=2)
    assert live.job_id == 2 and not live.shadow and shadowed.shadow
    assert PredictionRecord.objects.filter(job_id=1).get() == other  # never touched by others' telemetry


def _report_at_limit(job, agent, gpu_limit_w, allocation_limit_w, steps_per_s=2.0, refused=""):
    from scheduler.dispatch.progress import job_progress_report

    allocation = Allocation.objects.select_related("gpu__node", "gpu__gpu_type").get(job=job)
    Allocation.objects.filter(pk=allocation.pk).update(power_limit_w=allocation_limit_w)
    gpu = allocation.gpu
    gpu.node.agent = agent
    gpu.node.save()
    gpu.power_limit_default_w, gpu.power_limit_w, gpu.power_limit_error = gpu.gpu_type.tdp_w, gpu_limit_w, refused
    gpu.save()
    job_progress_report(agent_user=agent, job_id=job.pk, status="running", steps=10, steps_per_s=steps_per_s,
                        now=timezone.now())
    return gpu.gpu_type


def _learnt_with(gpu_type, limit, steps_per_s=2.0):
    """The model's speed at `limit` corrected by the job's own reading there (its steps/s against
    P1's estimate on the type; test_limit_observations.py)."""
    from catalog.predictors.learnt_limits import correction

    model = default_model().at_power_limit("New", gpu_type.name, limit)[0]
    p1 = ESTIMATES["tau"][ESTIMATES["configs"].index([gpu_type.name, 1, True])]
    return correction([(model, steps_per_s / p1)]).at(model)


def test_a_measurement_below_the_default_limit_is_recorded_as_at_the_default(unmeasured, alice, agent):
    """Divided by the speed fraction the optimiser would plan at that limit (the model corrected
    by the readings, this one's included): planning the job at the same limit again predicts
    what was measured (docs/power_limits.md)."""
    job = services.job_submit(owner=alice, workload=unmeasured, min_throughput=1, max_gpus=1).job
    services.scheduling_round_run(trigger="manual")
    gpu_type = Allocation.objects.get(job=job).gpu.gpu_type
    limit = 0.7 * gpu_type.tdp_w
    _report_at_limit(job, agent, gpu_limit_w=limit, allocation_limit_w=limit)
    speed = _learnt_with(gpu_type, limit)
    assert speed < 1 and Measurement.objects.get(source="telemetry").throughput == pytest.approx(2.0 / speed)


def test_a_board_that_refused_the_limit_ran_at_the_one_in_force(unmeasured, alice, agent):
    """A board that refused the limit ran at its default: its measurement is recorded as it is."""
    job = services.job_submit(owner=alice, workload=unmeasured, min_throughput=1, max_gpus=1).job
    services.scheduling_round_run(trigger="manual")
    gpu_type = Allocation.objects.get(job=job).gpu.gpu_type
    _report_at_limit(job, agent, gpu_limit_w=gpu_type.tdp_w, allocation_limit_w=0.7 * gpu_type.tdp_w,
                     refused="Insufficient Permissions")
    assert Measurement.objects.get(source="telemetry").throughput == 2.0


def test_the_limit_asked_for_counts_before_a_heartbeat_reports_it(unmeasured, alice, agent):
    """The agent applies the limit within a poll and the job slows at once; the board's report of
    it comes a heartbeat later. Read as the old default, the measurement would be learnt slow."""
    job = services.job_submit(owner=alice, workload=unmeasured, min_throughput=1, max_gpus=1).job
    services.scheduling_round_run(trigger="manual")
    gpu_type = Allocation.objects.get(job=job).gpu.gpu_type
    limit = 0.7 * gpu_type.tdp_w
    _report_at_limit(job, agent, gpu_limit_w=gpu_type.tdp_w, allocation_limit_w=limit)
    speed = _learnt_with(gpu_type, limit)
    assert speed < 1 and Measurement.objects.get(source="telemetry").throughput == pytest.approx(2.0 / speed)


def test_a_measurement_at_a_limit_the_model_does_not_know_is_not_recorded(unmeasured, alice, agent):
    job = services.job_submit(owner=alice, workload=unmeasured, min_throughput=1, max_gpus=1).job
    services.scheduling_round_run(trigger="manual")
    gpu_type = Allocation.objects.get(job=job).gpu.gpu_type
    _report_at_limit(job, agent, gpu_limit_w=0.05 * gpu_type.tdp_w, allocation_limit_w=None)
    job.refresh_from_db()
    assert not Measurement.objects.filter(source="telemetry").exists() and job.steps_done == 10
