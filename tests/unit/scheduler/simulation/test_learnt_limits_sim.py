"""simulate's learning policies learn each workload's limit curve from their observations
(learned.SimulatedLearning.observe_limit, engine._observe) and plan limits with it; the report's
power_limit_speed_mape."""
from dataclasses import replace

import pytest

from catalog.predictors import build_catalog
from catalog.predictors.learnt_limits import correction
from scheduler.optimizer.catalog_predictions import CatalogPredictions
from scheduler.optimizer.registry import get_solver
from scheduler.simulation import engine as engine_module
from scheduler.simulation.boards import Boards
from scheduler.simulation.cluster import build_gpus, gpu_types
from scheduler.simulation.engine import Simulation
from scheduler.simulation.jobs import SimJob
from scheduler.simulation.learned import SimulatedLearning
from scheduler.simulation.measurements import without_memory
from scheduler.simulation.metrics import limit_metrics
from scheduler.simulation.policies import POLICIES
from scheduler.simulation.scenario import Scenario
from scheduler.simulation.truth import Truth

LM = "LM (batch size 20)"  # no Zeus network: its truth departs from the fitted model by its seeded factor
LIMIT_W = 180.0  # 0.6 of a V100's 300 W


@pytest.fixture
def learning(reference_records, quick_model):
    data = build_catalog(reference_records)
    return SimulatedLearning(quick_model, CatalogPredictions(without_memory(reference_records)),
                             dict(zip(data.workloads, data.features)))


def test_readings_at_the_default_and_at_a_limit_give_the_learnt_curve(learning):
    model = learning.model_at_power_limit(LM, "v100", LIMIT_W)
    assert model[0] < 1 and learning.at_power_limit(LM, "v100", LIMIT_W) == pytest.approx(model)
    seen = 1 - 1.5 * (1 - model[0])  # a shortfall 1.5 x the model's
    for _ in range(20):
        learning.observe_limit(LM, "v100", None, 1.0)
        learning.observe_limit(LM, "v100", LIMIT_W, seen)
    expected = correction([(1.0, 1.0), (model[0], seen)] * 20).at(model[0])
    assert learning.at_power_limit(LM, "v100", LIMIT_W)[0] == pytest.approx(expected)
    assert abs(expected - seen) < abs(model[0] - seen) / 5  # most of the way to what was seen
    assert learning.at_power_limit(LM, "k80", 0.6 * 150) == learning.model_at_power_limit(LM, "k80", 0.6 * 150)


def test_power_read_against_the_first_planned_draw_teaches_the_draw_and_the_power_curve(learning):
    """Readings of power are read against the draw the pair was planned with before telemetry,
    kept from the first: at the default they teach the draw (its reference factor), at a limit the
    power fraction; the speed's curve is not touched by them."""
    assert learning.power_w(LM, "v100") is None and learning.utilization(LM, "v100") is None
    assert learning.prior_draw(LM, "v100", lambda u: 300.0 * u) == 300.0  # no catalog power: full load
    assert learning.observe_limit(LM, "v100", None, 1.0, 270.0, 300.0, 0.9)  # the draw is new: plan again
    assert learning.power_w(LM, "v100") < 300.0 and learning.utilization(LM, "v100") == 0.9
    model = learning.model_at_power_limit(LM, "v100", LIMIT_W)
    seen = 1 - 0.5 * (1 - model[1])  # it saves half the power the model says
    for _ in range(20):
        learning.observe_limit(LM, "v100", None, 1.0, 270.0, 200.0, 0.9)  # a later reference is not taken
        learning.observe_limit(LM, "v100", LIMIT_W, model[0], 270.0 * seen, 200.0, 0.9)
    assert learning.power_w(LM, "v100") == pytest.approx(270.0, rel=0.01)
    learnt = learning.at_power_limit(LM, "v100", LIMIT_W)
    assert learnt[0] == pytest.approx(model[0]) and abs(learnt[1] - seen) < abs(model[1] - seen) / 5
    assert learning.model_at_power_limit(LM, "v100", LIMIT_W) == model  # the model's input draw stays the catalog's


def test_a_ratio_no_rate_could_give_is_left_out(learning):
    before = learning.at_power_limit(LM, "v100", LIMIT_W)
    assert not learning.observe_limit(LM, "v100", LIMIT_W, 5.0)
    assert learning.at_power_limit(LM, "v100", LIMIT_W) == before


def test_the_reference_is_the_catalogs_measured_mean(learning):
    assert learning.reference(LM, "v100", 1, True) == learning.catalog.tau(LM, "v100", 1, True)


class LimitingSolver:
    """round_robin's placements, each at `limit_w`."""

    def __init__(self, *limits_w):
        self.limits_w, self.rounds = limits_w, 0

    def solve(self, problem):
        """Round robin's plan at the next of `limits_w` in turn, then at the last for good, however
        often a round solves (a change of limit alone is no move)."""
        limit_w = self.limits_w[min(self.rounds, len(self.limits_w) - 1)]
        self.rounds += 1
        allocation = get_solver("round_robin").solve(problem)
        return replace(allocation, placements={j: replace(p, power_limit_w=limit_w)
                                               for j, p in allocation.placements.items()})


def one_v100(monkeypatch, reference_records, learning) -> tuple[Simulation, Truth, Scenario]:
    """One LM job on one V100, `gogh` learning, run at LIMIT_W, at the default, then at LIMIT_W, with
    the catalog as the truth (no deviation, no noise): every reading is the true fraction."""
    solver = LimitingSolver(LIMIT_W, None, LIMIT_W)
    monkeypatch.setattr(engine_module, "get_solver", lambda name: solver)
    truth = Truth(without_memory(reference_records), deviation=0.0, noise=0.0, seed=0)
    scenario = Scenario(jobs=(SimJob("a", LM, 0.0, 1, 1_000_000.0, 0.1),), gpus=build_gpus((("v100", 1),)),
                        gpu_types=gpu_types(["v100"]), boards=Boards(()))
    policy = next(p for p in POLICIES if p.name == "gogh")
    return Simulation(scenario, truth, policy, learning, seed=0), truth, scenario


def test_a_job_run_at_a_limit_teaches_its_curve_toward_the_truth(monkeypatch, reference_records, learning):
    """Read at two depths (the limit and the default), the learnt fraction moves from the model's
    toward the truth's."""
    simulation, truth, scenario = one_v100(monkeypatch, reference_records, learning)
    run = simulation.run()
    true = truth.at_power_limit(scenario.gpu_types["v100"], LM, LIMIT_W)[0]
    model = learning.model_at_power_limit(LM, "v100", LIMIT_W)[0]
    learnt = learning.at_power_limit(LM, "v100", LIMIT_W)[0]
    assert true != pytest.approx(model, abs=0.005)  # the truth departs from the model here
    assert learning.limits.corrections(LM, "v100")[0].count > 5
    assert abs(learnt - true) < abs(model - true)
    errors = run.limit_speed_errors
    assert errors and errors[-1][1] < errors[0][1]  # planned later with the learnt fraction
    # Its GPU's power too: the draw at the default and the power fraction at the limit, from the
    # type's power curve at full load and the model's fraction before.
    spec = scenario.gpu_types["v100"]
    assert learning.power_w(LM, "v100") == pytest.approx(truth.gpu_power_alone(spec, LM), rel=0.02)
    true_power = truth.at_power_limit(spec, LM, LIMIT_W)[1]
    model_power = learning.model_at_power_limit(LM, "v100", LIMIT_W)[1]
    assert abs(learning.at_power_limit(LM, "v100", LIMIT_W)[1] - true_power) < abs(model_power - true_power) / 3
    assert learning.utilization(LM, "v100") == pytest.approx(truth.utilization(LM, "v100"))
    report = limit_metrics(run)
    assert report["rounds"] == len(errors) and 0 <= report["late"] <= report["all"]


def test_a_board_a_brake_holds_back_gives_no_reading(monkeypatch, reference_records, learning):
    """Its rate tells how hard the brake bites, not the workload's curve (telemetry.gpu_health.braked_now)."""
    simulation, _, scenario = one_v100(monkeypatch, reference_records, learning)
    [gpu] = [g.id for g in scenario.gpus]
    simulation.watch.health[gpu] = {"throttle_reasons": ["hardware thermal slowdown"]}
    simulation.run()
    assert learning.limits.corrections(LM, "v100")[0].readings == 0
    assert learning.at_power_limit(LM, "v100", LIMIT_W) == learning.model_at_power_limit(LM, "v100", LIMIT_W)
