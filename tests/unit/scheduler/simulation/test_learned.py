"""gogh's predictions in the simulation: production's composition (measured means until a
workload is observed, then P2's estimate), with P2 fed by simulated telemetry."""
import pytest

from catalog.predictors import build_catalog
from scheduler.optimizer.catalog_predictions import CatalogPredictions
from scheduler.simulation.learned import SimulatedLearning
from scheduler.simulation.measurements import without_memory

WORKLOAD = "ResNet-50 (batch size 64)"


@pytest.fixture
def learned(quick_model, reference_records):
    catalog = build_catalog(reference_records)
    return SimulatedLearning(quick_model, CatalogPredictions(without_memory(reference_records)),
                             dict(zip(catalog.workloads, catalog.features)))


def test_before_observations_a_catalog_workload_is_predicted_from_the_catalog(learned, reference_records):
    catalog = CatalogPredictions(without_memory(reference_records))
    assert learned.tau(WORKLOAD, "k80", 1, True) == pytest.approx(catalog.tau(WORKLOAD, "k80", 1, True), rel=1e-6)
    assert learned.observations(WORKLOAD) == 0


def test_an_observed_configuration_is_answered_with_its_observed_mean(learned):
    learned.observe(WORKLOAD, "v100", 1, True, 10.0)
    learned.observe(WORKLOAD, "v100", 1, True, 12.0)
    assert learned.tau(WORKLOAD, "v100", 1, True) == pytest.approx(11.0)
    assert learned.observations(WORKLOAD) == 2


def test_a_deviation_seen_on_one_type_moves_the_unobserved_types(learned):
    """The workload runs 20% faster than the catalog says on a V100: P2 raises its K80 estimate too."""
    before = learned.tau(WORKLOAD, "k80", 1, True)
    v100 = learned.tau(WORKLOAD, "v100", 1, True)
    assert learned.observe(WORKLOAD, "v100", 1, True, 1.2 * v100) is True
    assert before * 1.05 < learned.tau(WORKLOAD, "k80", 1, True) <= before * 1.2 * 1.001


def test_observations_of_one_workload_leave_the_others_alone(learned):
    other = "A3C"
    before = learned.tau(other, "k80", 1, True)
    learned.observe(WORKLOAD, "v100", 1, True, 1.0)
    assert learned.tau(other, "k80", 1, True) == before


def test_a_repeated_observation_of_the_same_value_is_not_a_change(learned):
    v100 = learned.tau(WORKLOAD, "v100", 1, True)
    assert learned.observe(WORKLOAD, "v100", 1, True, v100) is True  # a first observation of the cell
    assert learned.observe(WORKLOAD, "v100", 1, True, v100) is False


def test_an_observed_pair_gives_rho_against_the_observed_isolated_throughput(learned):
    alone = learned.tau(WORKLOAD, "v100", 1, True)
    learned.observe(WORKLOAD, "v100", 1, True, alone)
    learned.observe(WORKLOAD, "v100", 1, True, 0.5 * alone, partner="A3C")
    assert learned.rho(WORKLOAD, "A3C", "v100") == pytest.approx(0.5)
    assert learned.throughput(WORKLOAD, "v100", 1, True, partners=("A3C",)) == pytest.approx(0.5 * alone)


def test_a_pair_slower_than_the_catalog_says_lowers_that_pair_not_the_workload_alone(learned):
    """P2 puts a pair observation on the pair's co-location fraction; isolated estimates stay."""
    alone = learned.tau(WORKLOAD, "k80", 1, True)
    expected = learned.throughput(WORKLOAD, "v100", 1, True, partners=("A3C",))
    learned.observe(WORKLOAD, "v100", 1, True, 0.8 * expected, partner="A3C")
    assert learned.throughput(WORKLOAD, "v100", 1, True, partners=("A3C",)) == pytest.approx(0.8 * expected, rel=0.02)
    assert learned.tau(WORKLOAD, "k80", 1, True) == pytest.approx(alone)
