"""Migration 0003: a stored sweep's problem gets the `utilizations` key the serializer reads, and back."""
import json

import pytest

from catalog.measurement_record import MeasurementRecord
from scheduler.optimizer.catalog_predictions import CatalogPredictions
from scheduler.optimizer.serialization import problem_from_dict, problem_to_dict
from tests.unit.migrating import migrate_to, migrate_to_newest
from tests.unit.scheduler.optimizer.factory import gpu_type, job, node, problem

BEFORE = ("dashboard", "0002_tradeoffpoint_fairness_weight")
AFTER = ("dashboard", "0003_problem_utilization_key")


def _as_stored_before(problem: dict) -> dict:
    """The problem as the serializer wrote it before the key was renamed."""
    stored = json.loads(json.dumps(problem))
    stored["predictions"]["utilisations"] = stored["predictions"].pop("utilizations")
    return stored


@pytest.mark.django_db(transaction=True)
def test_a_sweep_stored_with_the_old_key_loads_after_the_migration_and_goes_back():
    measured = CatalogPredictions([MeasurementRecord(workload="a", gpu_type="v100", throughput=10.0, utilization=0.8)])
    data = problem_to_dict(problem([job(1, "a", tmin=5)], node("v100", "n", 1), [gpu_type("v100", 300)], measured))
    old = migrate_to(BEFORE)
    sweep = old.get_model("dashboard", "TradeoffSweep").objects.create(
        state_digest="d" * 64, problem=_as_stored_before(data), surplus_value_w=100.0, points_expected=1)

    new = migrate_to(AFTER)
    stored = new.get_model("dashboard", "TradeoffSweep").objects.get(pk=sweep.pk).problem
    assert stored == json.loads(json.dumps(data))
    assert problem_from_dict(stored).predictions.utilization("a", "v100") == 0.8

    old = migrate_to(BEFORE)
    assert old.get_model("dashboard", "TradeoffSweep").objects.get(pk=sweep.pk).problem == _as_stored_before(data)
    migrate_to_newest()  # as the other tests expect
