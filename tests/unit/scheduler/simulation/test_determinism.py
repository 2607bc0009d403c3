"""A seed fixes the whole evaluation: same seed, same report (solve times aside)."""
from catalog.predictors import build_catalog
from scheduler.optimizer.catalog_predictions import CatalogPredictions
from scheduler.simulation.engine import Simulation
from scheduler.simulation.learned import SimulatedLearning
from scheduler.simulation.measurements import without_memory
from scheduler.simulation.metrics import policy_metrics
from scheduler.simulation.policies import POLICIES
from scheduler.simulation.run import build_scenario
from scheduler.simulation.truth import Truth

BY_NAME = {p.name: p for p in POLICIES}


def run_once(seed, reference_records, model):
    truth = Truth(without_memory(reference_records), seed=seed)
    scenario = build_scenario(truth, jobs=6, jobs_per_hour=4.0, seed=seed)
    catalog = CatalogPredictions(without_memory(reference_records))
    data = build_catalog(reference_records)
    out = {}
    for name, predictions in (("gogh", SimulatedLearning(model, catalog, dict(zip(data.workloads, data.features)))),
                              ("random", catalog), ("oracle", truth.predictions())):
        run = Simulation(scenario, truth, BY_NAME[name], predictions, seed=seed).run()
        metrics = policy_metrics(run)
        metrics.pop("solve_seconds")
        out[name] = (metrics, dict(run.curve))
    return out


def test_the_same_seed_gives_the_same_results_and_another_seed_others(reference_records, quick_model):
    first = run_once(0, reference_records, quick_model)
    assert first == run_once(0, reference_records, quick_model)
    assert first != run_once(1, reference_records, quick_model)
    assert first["gogh"][0]["completed"] == 6


def test_the_ilps_decisions_do_not_depend_on_the_clock(reference_records, quick_model, monkeypatch):
    """simulate stops its integer programs by work (run.NODE_LIMIT branch-and-bound nodes), not by
    CPU time: with a clock that has run out before every solve (what a very loaded machine looks
    like to a time limit) the report is the same."""
    from scheduler.optimizer import cpu_clock, ilp

    truth = Truth(without_memory(reference_records), seed=0)
    assert build_scenario(truth, jobs=6, jobs_per_hour=4.0, seed=0).settings.node_limit > 0
    calm = run_once(0, reference_records, quick_model)
    monkeypatch.setattr(cpu_clock, "cpu_now", lambda: float("inf"))
    monkeypatch.setattr(ilp, "cpu_now", lambda: float("inf"))
    assert run_once(0, reference_records, quick_model) == calm
