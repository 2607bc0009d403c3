"""Solver settings in the admin: one row, edited through the service, every change audited."""
import pytest
from django.forms.models import model_to_dict

from scheduler.models import SolverConfig, SolverConfigChange


def test_editing_settings_in_the_admin_records_who_changed_what(client, root):
    config = SolverConfig.load()
    url = f"/admin/scheduler/solverconfig/{config.pk}/change/"
    assert client.get(url).status_code == 200
    form = {k: v for k, v in model_to_dict(config).items() if v is not None and k != "id"}
    form.update({"solver": "genetic", "time_limit_s": "5", "fairness_weight": "0.5"})
    form = {k: ("on" if v is True else v) for k, v in form.items() if v is not False}
    form.update({"changes-TOTAL_FORMS": "0", "changes-INITIAL_FORMS": "0"})
    response = client.post(url, form)
    assert response.status_code == 302, response.content.decode()[:2000]
    config.refresh_from_db()
    assert (config.solver, config.time_limit_s, config.fairness_weight) == ("genetic", 5.0, 0.5)
    changes = {c.field: (c.old_value, c.new_value) for c in SolverConfigChange.objects.filter(changed_by=root)}
    assert changes == {"solver": ("ilp", "genetic"), "time_limit_s": ("10.0", "5.0"), "fairness_weight": ("0.0", "0.5")}
    assert "genetic" in client.get(url).content.decode()  # the trail shows on the page


def test_settings_cannot_be_added_twice_or_deleted(client, root):
    SolverConfig.load()
    assert client.get("/admin/scheduler/solverconfig/add/").status_code == 403
    assert client.get(f"/admin/scheduler/solverconfig/{SolverConfig.SINGLETON_PK}/delete/").status_code == 403
    assert client.get("/admin/scheduler/solverconfigchange/").status_code == 200


def settings_form(config, **changes) -> dict:
    form = {
        k: ("on" if v is True else v)
        for k, v in model_to_dict(config).items()
        if v is not None and v is not False and k != "id"
    }
    form.update({**changes, "changes-TOTAL_FORMS": "0", "changes-INITIAL_FORMS": "0"})
    return form


@pytest.mark.parametrize("field, value", [("theta", "5"), ("fairness_weight", "-1")])
def test_a_theta_above_four_or_a_negative_fairness_weight_is_refused_with_a_message(client, root, field, value):
    from scheduler.optimizer.problem import THETA_REFUSED

    config = SolverConfig.load()
    url = f"/admin/scheduler/solverconfig/{config.pk}/change/"
    response = client.post(url, settings_form(config, **{field: value}))
    assert response.status_code == 200  # the form again, with the error
    page = response.content.decode()
    if field == "theta":
        assert THETA_REFUSED in page
    else:
        assert "greater than or equal to 0" in page
    config.refresh_from_db()
    assert (config.theta, config.fairness_weight) == (2, 0.0) and not SolverConfigChange.objects.exists()


def test_a_theta_of_four_is_saved_with_its_audit_record(client, root):
    """Groups of up to four jobs per GPU (estimated from pairs) are allowed since MAX_THETA = 4."""
    config = SolverConfig.load()
    response = client.post(f"/admin/scheduler/solverconfig/{config.pk}/change/", settings_form(config, theta="4"))
    assert response.status_code == 302
    config.refresh_from_db()
    assert config.theta == 4
    change = SolverConfigChange.objects.get()
    assert (change.field, change.old_value, change.new_value) == ("theta", "2", "4")


def test_the_fairness_weight_reaches_the_solver_settings():
    from scheduler.problem_source import solver_settings

    assert solver_settings(SolverConfig(fairness_weight=2.0)).fairness_weight == 2.0


@pytest.mark.parametrize("field, value", [
    ("fairness_weight", "1e308"), ("base_energy_weight", "1e300"), ("throughput_value_w", "1e300"),
    ("migration_cost_w", "1e300"), ("load_window", "0"), ("cell_size_gpus", "0"),
])
def test_values_that_would_break_every_round_are_refused(client, root, field, value):
    """fairness_weight 1e308 was saved, and from then on HiGHS answered "Not Solved" and every
    round fell back to the greedy decision; a load window or cell size of 0 means nothing."""
    config = SolverConfig.load()
    before = model_to_dict(config)
    response = client.post(
        f"/admin/scheduler/solverconfig/{config.pk}/change/", settings_form(config, **{field: value})
    )
    assert response.status_code == 200 and "errornote" in response.content.decode()
    config.refresh_from_db()
    assert model_to_dict(config) == before and not SolverConfigChange.objects.exists()
