"""A job measured alone is a reading of its workload's limit curve on the type: its rate over a
reference telemetry never changes (the catalog's measurement, else P1's estimate), at the limit
its GPUs ran at, the default included (docs/power_limits.md, "Limit curves learnt from
telemetry"); the next round plans with the curve."""
import pytest
from django.utils import timezone

from catalog.models import LimitObservation, Measurement
from catalog.predictors.learnt_limits import correction
from catalog.predictors.power_limits import default_model
from catalog.selectors import LIMIT_WINDOW, learnt_limits, reference_draws, reference_rate
from catalog.services.limit_observations import limit_observation_record
from scheduler import services
from scheduler.dispatch.at_default_limit import fractions_at
from scheduler.dispatch.limit_observations import limit_observation_from
from scheduler.dispatch.progress import job_progress_report
from scheduler.models import Allocation
from scheduler.optimizer.power import PowerCurve
from scheduler.problem_source import planning_predictions
from telemetry.models import Gpu
from tests.unit.gogh_web.broker import broker as broker  # fixtures, `as` marks them re-exported
from tests.unit.scheduler.test_planning_predictions import unmeasured as unmeasured

P1_V100 = 12.0  # the stored P1 estimate of "New" alone on one V100 (test_planning_predictions.ESTIMATES)


def _placed(alice, agent, workload, min_throughput=2.5):
    """A job of `workload` placed by a round, on a node of `agent`."""
    job = services.job_submit(owner=alice, workload=workload, min_throughput=min_throughput, max_gpus=1).job
    services.scheduling_round_run(trigger="manual")
    allocation = Allocation.objects.select_related("gpu__node", "gpu__gpu_type").get(job=job)
    allocation.gpu.node.agent = agent
    allocation.gpu.node.save()
    return job, allocation


def _report(agent, job, steps_per_s):
    job_progress_report(agent_user=agent, job_id=job.pk, status="running", steps=10, steps_per_s=steps_per_s,
                        now=timezone.now())


def test_a_job_alone_at_a_limit_is_read_against_p1_and_still_recorded_at_the_default(
        unmeasured, alice, agent, broker, django_capture_on_commit_callbacks):
    job, allocation = _placed(alice, agent, unmeasured)
    assert allocation.gpu.gpu_type.name == "v100" and allocation.power_limit_speed < 1  # placed at a limit
    with django_capture_on_commit_callbacks(execute=True):
        _report(agent, job, 2.9)
    seen = LimitObservation.objects.get()
    model = default_model().at_power_limit("New", "v100", allocation.power_limit_w)
    assert seen.speed_ratio == pytest.approx(2.9 / P1_V100) and seen.model_speed == pytest.approx(model[0])
    assert (seen.workload, seen.gpu_type, seen.limit_w, seen.default_w) == (
        unmeasured, allocation.gpu.gpu_type, allocation.power_limit_w, 300)
    assert seen.reference == f"telemetry: job {job.pk}" and seen.power_ratio is None  # no GPU samples
    # P2 still learns the rate at the default, brought back by the speed learnt with this reading:
    # one depth read, the model's (a reference that is off must not bend the curve)
    measurement = Measurement.objects.get(source="telemetry")
    assert correction([(model[0], 2.9 / P1_V100)]).at(model[0]) == pytest.approx(model[0])
    assert measurement.throughput == pytest.approx(2.9 / model[0])
    assert broker.of("catalog.tasks.prediction_refine") == [([measurement.pk, job.pk], {}, None)]


def test_a_job_at_the_default_is_a_reading_at_the_default(unmeasured, alice, agent, default_power_limits):
    job, allocation = _placed(alice, agent, unmeasured)
    assert (allocation.gpu.gpu_type.name, allocation.power_limit_w) == ("v100", None)
    _report(agent, job, 2.9)
    seen = LimitObservation.objects.get()
    assert (seen.limit_w, seen.model_speed, seen.speed_ratio) == (300, 1.0, pytest.approx(2.9 / P1_V100))
    assert Measurement.objects.get(source="telemetry").throughput == 2.9


@pytest.mark.parametrize("observations, board", [(4, 1.0), (5, 0.9)])
def test_a_reading_is_divided_by_its_boards_learnt_speed(unmeasured, alice, agent, default_power_limits,
                                                         observations, board):
    """A board learnt 10 % slow (from enough measurements) does not make its workload's reference
    read 10 % low; one with too few measurements behind its speed is read at 1."""
    Gpu.objects.update(speed_factor=0.9, speed_observations=observations)
    job, _ = _placed(alice, agent, unmeasured)
    _report(agent, job, 2.7)
    assert LimitObservation.objects.get().speed_ratio == pytest.approx(2.7 / board / P1_V100)
    assert Measurement.objects.get(source="telemetry").throughput == 2.7  # P2 takes the rate as seen


def test_within_the_measurement_interval_a_second_report_records_nothing_more(unmeasured, alice, agent):
    job, _ = _placed(alice, agent, unmeasured)
    _report(agent, job, 2.2)
    _report(agent, job, 2.3)
    assert LimitObservation.objects.count() == 1 and Measurement.objects.filter(source="telemetry").count() == 1


def test_a_rate_no_limit_could_give_against_the_reference_is_left_out(unmeasured, alice, agent):
    job, _ = _placed(alice, agent, unmeasured)
    _report(agent, job, 50.0)  # over 3 x P1's 12 steps/s
    job.refresh_from_db()
    assert not LimitObservation.objects.exists() and job.steps_done == 10  # the report itself stands


def test_a_board_a_brake_holds_back_gives_no_reading(unmeasured, alice, agent):
    """Its rate says how hard the brake bites, not how the workload runs at the limit."""
    job, allocation = _placed(alice, agent, unmeasured)
    allocation.gpu.health = {"throttle_reasons": ["hardware thermal slowdown"]}
    allocation.gpu.save()
    _report(agent, job, 2.2)
    assert not LimitObservation.objects.exists() and Measurement.objects.filter(source="telemetry").exists()


def test_without_a_reference_no_reading_is_taken(unmeasured, alice, agent):
    job, _ = _placed(alice, agent, unmeasured)
    unmeasured.limit_observations.all().delete()
    from catalog.models import PredictionRecord

    PredictionRecord.objects.filter(workload=unmeasured).update(observations=[{"throughput": 1.0}])  # no P1 left
    _report(agent, job, 2.2)
    assert not LimitObservation.objects.exists() and Measurement.objects.filter(source="telemetry").exists()


def test_the_reference_is_the_catalogs_measurement_where_there_is_one(unmeasured, v100):
    for throughput, source in ((10.0, "reference"), (14.0, "profiling"), (1.0, "telemetry")):
        Measurement.objects.create(workload=unmeasured, gpu_type=v100, throughput=throughput, source=source,
                                   observed_at=timezone.now())
    assert reference_rate(workload=unmeasured, gpu_type=v100, num_gpus=1, consolidated=True) == 12.0
    assert reference_rate(workload=unmeasured, gpu_type=v100, num_gpus=2, consolidated=True) is None  # P1: 0


def test_the_draw_known_without_telemetry_is_the_reference_and_profiling_power(unmeasured, v100, k80):
    """Telemetry's measurements (brought back to the default by fractions learnt against this
    draw) never move it: read against a draw that moved with them, readings chase it."""
    now = timezone.now()
    for power_w, source, gpu_type, num_gpus in ((200.0, "reference", v100, 1), (260.0, "profiling", v100, 1),
                                                (90.0, "telemetry", v100, 1), (500.0, "reference", v100, 2),
                                                (100.0, "reference", k80, 1)):
        Measurement.objects.create(workload=unmeasured, gpu_type=gpu_type, throughput=10.0, power_w=power_w,
                                   source=source, num_gpus=num_gpus, observed_at=now)
    Measurement.objects.create(workload=unmeasured, gpu_type=k80, throughput=10.0, source="reference", observed_at=now)
    assert reference_draws(names={"New", "Other"}) == {("New", "v100"): 230.0, ("New", "k80"): 100.0}
    speed, power, draw = fractions_at("New", "v100", 210.0)
    assert draw == 230.0 and (speed, power) == default_model().at_power_limit("New", "v100", 210.0, draw_w=230.0)
    assert planning_predictions({"New"}).at_power_limit("New", "v100", 210.0) == (speed, power)


def test_a_readings_power_is_read_against_the_known_draw_else_the_full_load_curve(unmeasured, alice, agent):
    job, allocation = _placed(alice, agent, unmeasured)
    gpu_type = allocation.gpu.gpu_type
    full_load = PowerCurve.from_points(gpu_type.power_curve, gpu_type.idle_w, gpu_type.tdp_w)(1.0)
    for known_w, expected in ((None, 150.0 / full_load), (250.0, 150.0 / 250.0)):
        limit_observation_from(job, [allocation], 210.0, (0.8, 0.7, known_w), 2.9, 150.0, reference="t",
                               now=timezone.now())
        seen = LimitObservation.objects.latest("id")
        assert (seen.power_ratio, seen.model_power) == (pytest.approx(expected), 0.7)


def test_the_service_refuses_a_reading_out_of_range_naming_it_and_stores_nothing(unmeasured, v100):
    common = {"workload": unmeasured, "gpu_type": v100, "default_w": 300.0, "reference": "t",
              "observed_at": timezone.now()}
    with pytest.raises(ValueError, match="^speed must"):
        limit_observation_record(limit_w=210.0, speed_ratio=0.0, model_speed=0.8, **common)
    with pytest.raises(ValueError, match="^limit_w must"):
        limit_observation_record(limit_w=310.0, speed_ratio=0.9, model_speed=1.0, **common)
    assert not LimitObservation.objects.exists()


def _observe(workload, gpu_type, count, model_speed=0.8, speed_ratio=0.6, start=None):
    start = start or timezone.now()
    for i in range(count):
        limit_observation_record(workload=workload, gpu_type=gpu_type, limit_w=300.0 if model_speed == 1 else 210.0,
                                 default_w=300.0, speed_ratio=speed_ratio, model_speed=model_speed, reference="t",
                                 observed_at=start - timezone.timedelta(seconds=i))


def test_a_curve_rests_on_the_newest_readings_of_its_window(unmeasured, v100):
    _observe(unmeasured, v100, LIMIT_WINDOW, speed_ratio=0.6)
    _observe(unmeasured, v100, 5, speed_ratio=0.2, start=timezone.now() - timezone.timedelta(hours=1))  # older
    limits = learnt_limits(names={"New"})
    assert limits.corrections("New", "v100")[0] == correction([(0.8, 0.6)] * LIMIT_WINDOW)


def test_the_next_round_plans_with_the_learnt_fraction(unmeasured, alice, v100):
    # At the default the job ran at its reference; at 0.8 of the model, at 0.6: the curve is twice the model's.
    _observe(unmeasured, v100, 20, model_speed=1.0, speed_ratio=1.0)
    _observe(unmeasured, v100, 20)
    learnt = correction([(1.0, 1.0)] * 20 + [(0.8, 0.6)] * 20)
    assert learnt.factor == pytest.approx(2.0, abs=0.1)
    predictions = planning_predictions({"New"})
    limit = 0.7 * v100.tdp_w
    model = default_model().at_power_limit("New", "v100", limit)
    assert model[0] < 1
    assert predictions.at_power_limit("New", "v100", limit)[0] == pytest.approx(learnt.at(model[0]))
    assert predictions.at_power_limit("New", "k80", 0.7 * 150) == pytest.approx(
        default_model().at_power_limit("New", "k80", 0.7 * 150))  # another type keeps the model's
    job = services.job_submit(owner=alice, workload=unmeasured, min_throughput=2.5, max_gpus=1).job
    services.scheduling_round_run(trigger="manual")
    allocation = Allocation.objects.select_related("gpu__gpu_type").get(job=job)
    assert allocation.gpu.gpu_type.name == "v100" and allocation.power_limit_w is not None
    planned = default_model().at_power_limit("New", "v100", allocation.power_limit_w)[0]
    assert planned < 1 and allocation.power_limit_speed == pytest.approx(learnt.at(planned))
