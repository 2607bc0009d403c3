"""Migration 0006: the fairness switch becomes a weight and a theta above 2 becomes 2."""
import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("scheduler", "0005_job_memory")]
AFTER = [("scheduler", "0006_solver_fairness_weight")]


@pytest.mark.django_db(transaction=True)
def test_fairness_on_becomes_weight_one_and_theta_is_brought_into_range():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps.get_model("scheduler", "SolverConfig")
    old.objects.create(pk=1, fairness=True, theta=3)
    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps.get_model("scheduler", "SolverConfig")
    config = new.objects.get(pk=1)
    assert (config.fairness_weight, config.theta) == (1.0, 2)
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())  # leave the schema as the other tests expect
