"""The predictions' uncertainty accessor the exploration and the margin rule read: (log-space
standard deviation, measured) of each throughput the optimiser plans with."""
import math

import numpy as np
import pytest

from catalog.measurement_record import MeasurementRecord
from scheduler.optimizer.catalog_predictions import CatalogPredictions
from scheduler.optimizer.exploration import beliefs
from scheduler.predictions import LearnedPredictions, WorkloadEstimates

from .factory import gpu_type, job, node, problem

ESTIMATES = {
    "partners": ["LM"], "gpu_types": ["v100", "a100"],
    "configs": [["v100", 1, True], ["v100", 2, True], ["a100", 1, True]],
    "rho": [[0.5, 0.6]], "rho_std": [[0.1, 0.2]],
    "tau": [9.5, 17.0, 20.0], "tau_std": [0.15, 0.2, 0.52], "low_confidence": True,
    "unmeasured_gpu_types": ["a100"],
}


def test_catalog_measurements_are_measured_with_the_spread_of_their_records():
    """Two records of 8 and 10: log-sd = |ln 10 - ln 8| / 2 = 0.1116; one record: no spread."""
    catalog = CatalogPredictions([
        MeasurementRecord("New", "v100", 8.0), MeasurementRecord("New", "v100", 10.0),
        MeasurementRecord("New", "k80", 3.0),
    ])
    assert catalog.uncertainty("New", "v100", 1, True) == (pytest.approx(math.log(10 / 8) / 2), True)
    assert catalog.uncertainty("New", "k80", 1, False) == (0.0, True)


def test_learned_estimates_carry_their_stored_spread_and_catalog_numbers_stay_measured():
    """Before any observation the catalog's v100 number is used (measured, its spread); P1 fills
    v100 x 2 (0.2, not measured) and the datasheet guess on a100 (0.52, not measured)."""
    catalog = CatalogPredictions([MeasurementRecord("New", "v100", 9.0)])
    learned = LearnedPredictions(catalog, {"New": WorkloadEstimates.from_record(ESTIMATES)})
    assert learned.uncertainty("New", "v100", 1, True) == (0.0, True)
    assert learned.uncertainty("New", "v100", 2, True) == (0.2, False)
    assert learned.uncertainty("New", "a100", 1, True) == (0.52, False)


def test_an_observed_configuration_reads_as_measured():
    """P2 sets the spread of a cell it observed to exactly 0 (catalog.predictors.online)."""
    refined = WorkloadEstimates.from_record({**ESTIMATES, "tau_std": [0.15, 0.2, 0.0], "observed": 1})
    learned = LearnedPredictions(CatalogPredictions([]), {"New": refined})
    assert learned.uncertainty("New", "a100", 1, True) == (0.0, True)
    assert learned.uncertainty("New", "v100", 1, True) == (0.15, False)


def test_a_record_without_spreads_is_read_as_no_margin():
    record = {k: v for k, v in ESTIMATES.items() if k != "tau_std"}
    learned = LearnedPredictions(CatalogPredictions([]), {"New": WorkloadEstimates.from_record(record)})
    assert learned.uncertainty("New", "a100", 1, True) == (0.0, False)


def test_estimates_of_a_prediction_in_memory_keep_its_measured_cells():
    class Prediction:
        partners, gpu_types = ["LM"], ["v100", "a100"]
        configs = [("v100", 1, True), ("a100", 1, True)]
        rho = np.array([[0.5, 0.6]])
        tau, tau_std = np.array([9.0, 20.0]), np.array([0.0, 0.5])
        tau_measured = np.array([True, False])
        low_confidence = False

    estimates = WorkloadEstimates.from_prediction(Prediction(), observed=1)
    assert estimates.tau_std == {("v100", 1, True): 0.0, ("a100", 1, True): 0.5}
    assert estimates.measured == frozenset({("v100", 1, True)})


def test_beliefs_read_the_learned_predictions():
    catalog = CatalogPredictions([MeasurementRecord("New", "v100", 9.0)])
    learned = LearnedPredictions(catalog, {"New": WorkloadEstimates.from_record(ESTIMATES)})
    p = problem([job("j", "New", tmin=30, dj=2)], node("v100", "v", 2) + node("a100", "a", 1),
                [gpu_type("v100", 300), gpu_type("a100", 400, memory=80.0)], learned)
    assert sorted((b.gpu_type, b.num_gpus, b.tau, b.log_sd, b.measured) for b in beliefs(p, learned)["j"]) == [
        ("a100", 1, 20.0, 0.52, False), ("v100", 1, 9.0, 0.0, True), ("v100", 2, 17.0, 0.2, False)]
