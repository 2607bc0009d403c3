"""Stranded jobs and exploration in the simulation: a workload the catalog never measured, which
truly runs twice as fast as P1 can know, asks for more than P1 predicts anywhere. Without
exploration its job is never placed (stranded, counted in the report and the learning curve);
with it, a probe runs it, telemetry corrects P2, and the job completes."""
import pytest

from catalog.predictors import build_catalog
from scheduler.optimizer.catalog_predictions import CatalogPredictions
from scheduler.optimizer.exploration import ExplorationSettings
from scheduler.simulation.cluster import build_gpus, gpu_types
from scheduler.simulation.drift import drift_records, parse_drift
from scheduler.simulation.engine import Simulation
from scheduler.simulation.explore import Explorer
from scheduler.simulation.jobs import SimJob
from scheduler.simulation.learned import SimulatedLearning
from scheduler.simulation.measurements import without_memory
from scheduler.simulation.metrics import learning_curve, policy_metrics
from scheduler.simulation.policies import POLICIES
from scheduler.simulation.run import fit_predictor
from scheduler.simulation.scenario import Scenario
from scheduler.simulation.truth import Truth

HIDDEN = "ResNet-50 (batch size 64)"
#: gogh's exploration alone: every GPU at its default limit (power limits are test_power_limits_boards.py's).
GOGH = next(p for p in POLICIES if p.name == "gogh_no_power_limit")


@pytest.fixture(scope="module")
def world(reference_records):
    """The catalog without HIDDEN; the truth with HIDDEN x 2 on V100."""
    catalog_rows = [r for r in reference_records if HIDDEN not in (r.workload, r.partner)]
    model = fit_predictor(catalog_rows, seed=0, quick=True)
    drifted = drift_records(reference_records, [parse_drift(f"{HIDDEN}:v100:2")])
    truth_rows = [r for r in drifted if r.gpu_type == "v100"]
    known = build_catalog(reference_records)
    features = dict(zip(known.workloads, known.features))
    truth = Truth(without_memory(truth_rows), deviation=0.0, noise=0.0)
    return model, CatalogPredictions(without_memory(catalog_rows)), features, truth


def run(world, explore: bool):
    model, catalog, features, truth = world
    learned = SimulatedLearning(model, catalog, features, gpu_types=["v100"])
    predicted, true = learned.tau(HIDDEN, "v100", 1, True), truth.throughput(HIDDEN, "v100", 1, True)
    t_min = 1.3 * predicted
    assert predicted < t_min < true  # impossible as predicted, easy in truth
    job = SimJob("j", HIDDEN, 0.0, 1, true * 3600, t_min)
    scenario = Scenario(jobs=(job,), gpus=build_gpus((("v100", 2),)), gpu_types=gpu_types(["v100"]),
                        horizon_s=86400.0)
    explorer = Explorer(ExplorationSettings(), catalog) if explore else None
    return Simulation(scenario, truth, GOGH, learned, explorer=explorer).run()


def test_without_exploration_the_job_is_stranded_and_the_learning_curve_says_so(world):
    result = run(world, explore=False)
    metrics = policy_metrics(result)
    assert (metrics["completed"], metrics["stranded_jobs"], metrics["probes"]) == (0, 1, 0)
    curve = learning_curve(result.curve, 20, result.stranded_curve)
    assert curve["0"]["samples"] == 0  # nothing placed, nothing scored the old way
    assert curve["0"]["stranded"] == 240  # every round of the day
    assert curve["0"]["stranded_mape"] == pytest.approx(0.5, abs=0.1)  # P1 is off by about half


def test_with_exploration_a_probe_corrects_the_estimate_and_the_job_completes(world):
    result = run(world, explore=True)
    metrics = policy_metrics(result)
    assert (metrics["completed"], metrics["stranded_jobs"], metrics["probes"], metrics["probed_jobs"]) == (1, 0, 1, 1)
    assert metrics["preemptions"] == 0  # after the probe the corrected estimate keeps it running
    assert result.jobs[0].done_at == pytest.approx(3600)  # probed from the first round, never interrupted


class _Rates:
    """Predictions by GPU type (1 GPU, alone), exact: what _replanned and the beliefs read."""

    def __init__(self, rates):
        self.rates = rates

    def tau(self, workload, gpu_type, num_gpus, consolidated):
        return self.rates.get(gpu_type) if num_gpus == 1 else None

    def rho(self, workload, partner, gpu_type):
        return None

    def uncertainty(self, workload, gpu_type, num_gpus, consolidated):
        return 0.0, True


@pytest.mark.parametrize("k80, replanned", [(9.0, True), (5.0, False)])
def test_a_probe_that_measured_too_little_is_planned_as_pending_only_where_another_type_serves(k80, replanned):
    """On the V100 the job is now predicted at 6/s < T_min 8: with the K80 at 9/s it is planned
    as if pending (it may move); with the K80 at 5/s nothing serves it and it runs on."""
    from scheduler.optimizer.problem import CurrentPlacement, JobSpec, Problem
    from scheduler.simulation.explore import _replanned

    predictions = _Rates({"v100": 6.0, "k80": k80})
    gpus = build_gpus((("v100", 1), ("k80", 1)))
    job = JobSpec("j", HIDDEN, "t", 8.0, 1, current=CurrentPlacement((gpus[0].id,)))
    problem = Problem(jobs=(job,), gpus=gpus, gpu_types=gpu_types(["v100", "k80"]), predictions=predictions)
    after = _replanned(problem, predictions, {"j"})
    assert (after.jobs[0].current is None) is replanned
    assert _replanned(problem, predictions, set()).jobs[0].current == job.current  # a probe still running
