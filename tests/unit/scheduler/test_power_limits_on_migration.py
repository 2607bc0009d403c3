"""Migration 0019: power limits become a decision by default, except where an admin chose."""
import pytest

from tests.unit.migrating import migrate_to, migrate_to_newest


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("chosen, expected", [(None, True), ("False", False), ("True", True)])
def test_a_config_nobody_set_turns_limits_on_and_an_admins_choice_stands(chosen, expected):
    before = migrate_to(("scheduler", "0018_services"))
    config = before.get_model("scheduler", "SolverConfig").objects.create(pk=1, power_limits=chosen == "True")
    if chosen is not None:
        before.get_model("scheduler", "SolverConfigChange").objects.create(
            config=config, field="power_limits", old_value=str(chosen != "True"), new_value=chosen)
    after = migrate_to(("scheduler", "0019_power_limits_on"))
    assert after.get_model("scheduler", "SolverConfig").objects.get(pk=1).power_limits is expected
    migrate_to_newest()
