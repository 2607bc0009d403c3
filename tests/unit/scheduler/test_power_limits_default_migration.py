"""Migration 0019: power limits on by default, unless an operator ever set the setting."""
import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("scheduler", "0018_services")]
AFTER = [("scheduler", "0019_power_limits_on_by_default")]


def _migrated(changed_by_operator: bool) -> bool:
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    apps = executor.loader.project_state(BEFORE).apps
    config = apps.get_model("scheduler", "SolverConfig").objects.create(pk=1, power_limits=False)
    if changed_by_operator:
        apps.get_model("scheduler", "SolverConfigChange").objects.create(
            config=config, field="power_limits", old_value="True", new_value="False")
    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    on = executor.loader.project_state(AFTER).apps.get_model("scheduler", "SolverConfig").objects.get(pk=1).power_limits
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())  # leave the schema as the other tests expect
    return on


@pytest.mark.django_db(transaction=True)
def test_a_setting_off_only_by_default_is_turned_on():
    assert _migrated(changed_by_operator=False) is True


@pytest.mark.django_db(transaction=True)
def test_a_setting_an_operator_turned_off_stays_off():
    assert _migrated(changed_by_operator=True) is False
