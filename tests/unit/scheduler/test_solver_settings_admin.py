"""Solver settings in the admin: one row, edited through the service, every change audited."""
import pytest
from django.forms.models import model_to_dict

from scheduler.models import SolverConfig, SolverConfigChange


@pytest.fixture
def root(client, django_user_model):
    user = django_user_model.objects.create_superuser("root", password="pw-root")
    client.force_login(user)
    return user


def test_editing_settings_in_the_admin_records_who_changed_what(client, root):
    config = SolverConfig.load()
    url = f"/admin/scheduler/solverconfig/{config.pk}/change/"
    assert client.get(url).status_code == 200
    form = {k: v for k, v in model_to_dict(config).items() if v is not None and k != "id"}
    form.update({"solver": "genetic", "time_limit_s": "5", "fairness": "on"})
    form = {k: ("on" if v is True else v) for k, v in form.items() if v is not False}
    form.update({"changes-TOTAL_FORMS": "0", "changes-INITIAL_FORMS": "0"})
    response = client.post(url, form)
    assert response.status_code == 302, response.content.decode()[:2000]
    config.refresh_from_db()
    assert (config.solver, config.time_limit_s, config.fairness) == ("genetic", 5.0, True)
    changes = {c.field: (c.old_value, c.new_value) for c in SolverConfigChange.objects.filter(changed_by=root)}
    assert changes == {"solver": ("ilp", "genetic"), "time_limit_s": ("10.0", "5.0"), "fairness": ("False", "True")}
    assert "genetic" in client.get(url).content.decode()  # the trail shows on the page


def test_settings_cannot_be_added_twice_or_deleted(client, root):
    SolverConfig.load()
    assert client.get("/admin/scheduler/solverconfig/add/").status_code == 403
    assert client.get(f"/admin/scheduler/solverconfig/{SolverConfig.SINGLETON_PK}/delete/").status_code == 403
    assert client.get("/admin/scheduler/solverconfigchange/").status_code == 200
