"""The modern cluster: a T4/A100/H100 truth synthesized from the reference's V100 rows, a
catalog that knows none of those types until the profiling campaign, and a tiny run."""
import json
import random
from io import StringIO

import pytest
from django.core.management import call_command

from catalog.predictors import build_catalog
from scheduler.optimizer.catalog_predictions import CatalogPredictions
from scheduler.simulation.learned import SimulatedLearning
from scheduler.simulation.measurements import without_memory
from scheduler.simulation.modern import MODERN_TYPES, SUITE_CASES, modern_truth, suite_results
from scheduler.simulation.run import fit_predictor
from scheduler.simulation.truth import Truth


@pytest.fixture(scope="module")
def modern(reference_records):
    return modern_truth(reference_records)


def test_the_truth_covers_only_the_modern_types_with_the_measured_range_of_speed_ups(modern, reference_records):
    assert {r.gpu_type for r in modern} == set(MODERN_TYPES)
    truth = Truth(without_memory(modern), deviation=0.0)
    ratios = [truth.throughput(w, "a100", 1, True) / truth.throughput(w, "t4", 1, True) for w in truth.workloads()]
    assert 1.2 <= min(ratios) < 1.5 and 3.4 < max(ratios) <= 3.8  # issue 18: measured 1.2 to 3.7
    reference = CatalogPredictions(without_memory(reference_records))
    w, partner = "ResNet-50 (batch size 64)", "A3C"
    assert truth.shared_rho(w, partner, "h100") == pytest.approx(reference.rho(w, partner, "v100"))


def test_before_the_campaign_gogh_plans_the_new_types_from_specs_and_after_from_the_suite(
        modern, reference_records, quick_model):
    catalog = CatalogPredictions(without_memory(reference_records))
    known = build_catalog(reference_records)
    learned = SimulatedLearning(quick_model, catalog, dict(zip(known.workloads, known.features)),
                                gpu_types=MODERN_TYPES)
    w = "ResNet-50 (batch size 64)"
    assert learned.tau(w, "a100", 1, True) > 0 and learned.tau(w, "a100", 4, True) > 0
    spread, measured = learned.uncertainty(w, "a100", 1, True)
    assert spread >= 0.5 and not measured
    truth = Truth(without_memory(modern), deviation=0.0, noise=0.0)
    suite = suite_results(truth, random.Random(0))
    assert len(suite) == len(SUITE_CASES) * len(MODERN_TYPES)
    rows = [*reference_records, *suite]
    learned.refit(fit_predictor(rows, seed=0, quick=True), CatalogPredictions(without_memory(rows)))
    assert learned.tau(w, "a100", 1, True) == pytest.approx(truth.throughput(w, "a100", 1, True))
    assert learned.uncertainty(w, "a100", 1, True)[1] is True


def test_a_tiny_modern_run_profiles_every_type_then_completes_its_jobs(tmp_path):
    out = tmp_path / "modern.json"
    call_command("simulate", "--json", str(out), "--cluster", "modern", "--jobs", "3", "--jobs-per-hour", "4",
                 "--quick", "--policies", "gogh,oracle,greedy_fastest", stdout=StringIO(), stderr=StringIO())
    report = json.loads(out.read_text())
    assert report["scenario"]["gpus"] == {"t4": 44, "a100": 40, "h100": 24}
    assert report["scenario"]["cluster"] == "modern"
    assert len(report["scenario"]["campaign"]["gpus"]) == 12  # one server of each type
    for name in ("gogh", "oracle"):
        assert report["policies"][name]["completed"] == 3, name
        assert report["policies"][name]["stranded_jobs"] == 0, name
    assert "greedy_fastest" in report["policies"]  # a baseline on the catalog's numbers runs there too
