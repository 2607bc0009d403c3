"""Trade-off endpoints: the sweep cached per cluster state, preview as a dry run, apply for
staff only and audited, bad input as 400 with field messages, CSRF on session POSTs."""
import json

import pytest
from django.urls import reverse

from gogh_web.dashboard import services, tradeoff
from gogh_web.dashboard.models import TradeoffPoint, TradeoffSweep
from scheduler.models import Allocation, SolveRun, SolverConfig, SolverConfigChange

SETTINGS = {"base_energy_weight": 0.5, "adaptive_weight": False, "load_window": 10, "throughput_value_w": 100.0}


def post(client, name, body):
    return client.post(reverse(name), json.dumps(body), content_type="application/json")


@pytest.fixture
def dispatched(monkeypatch):
    """Sweeps sent to the workers (the Celery group is replaced by a record of its id)."""
    sent = []
    monkeypatch.setattr(services, "_dispatch_sweep", sent.append)
    return sent


def test_sweep_is_created_once_per_cluster_state(browser_for, alice, cluster, submit, dispatched, django_capture_on_commit_callbacks):
    client = browser_for(alice)
    with django_capture_on_commit_callbacks(execute=True):
        first = client.get(reverse("dashboard:tradeoff-sweep")).json()
    assert first["complete"] is False and first["points"] == [] and first["points_expected"] == 14
    assert dispatched == [first["sweep"]]
    with django_capture_on_commit_callbacks(execute=True):
        again = client.get(reverse("dashboard:tradeoff-sweep")).json()
    assert again["sweep"] == first["sweep"] and dispatched == [first["sweep"]]  # cached: nothing sent
    submit(alice)
    with django_capture_on_commit_callbacks(execute=True):
        changed = client.get(reverse("dashboard:tradeoff-sweep")).json()
    assert changed["sweep"] != first["sweep"] and dispatched == [first["sweep"], changed["sweep"]]
    assert TradeoffSweep.objects.count() == 2


def test_a_new_round_alone_keeps_the_cached_sweep(browser_for, alice, cluster, dispatched):
    client = browser_for(alice)
    first = client.get(reverse("dashboard:tradeoff-sweep")).json()["sweep"]
    SolveRun.objects.create(trigger="periodic", solver="ilp", status="optimal", load=0.4)
    assert client.get(reverse("dashboard:tradeoff-sweep")).json()["sweep"] == first


def test_points_solved_by_the_task_complete_the_sweep(browser_for, alice, cluster, submit, dispatched):
    submit(alice, min_throughput=3.0)  # one GPU: 4 steps/s, two: 7.5 (surplus capped at 1 x T_min)
    client = browser_for(alice)
    sweep_id = client.get(reverse("dashboard:tradeoff-sweep")).json()["sweep"]
    for setting in tradeoff.sweep_grid():
        services.tradeoff_point_solve(sweep_id=sweep_id, index=setting.index)
    services.tradeoff_point_solve(sweep_id=sweep_id, index=0)  # a redelivered task adds nothing
    assert TradeoffPoint.objects.filter(sweep_id=sweep_id).count() == 14
    data = client.get(reverse("dashboard:tradeoff-sweep")).json()
    assert data["complete"] is True and len(data["points"]) == 14
    low, high = data["points"][0], data["points"][6]  # weights 0.05 and 4, fairness off
    assert low["energy_weight"] == 0.05 and high["energy_weight"] == 4.0
    assert all(p["placed"] == 1 for p in data["points"])
    # at a low weight the surplus is worth the second GPU; at a high one the job takes one GPU
    assert low["throughput"] == pytest.approx(7.5) and high["throughput"] == pytest.approx(4.0)
    assert low["power_w"] > high["power_w"]
    assert data["current"] == {"throughput": 0.0, "power_w": 0.0, "fairness": 1.0, "placed": 0}


def test_preview_lists_moves_and_changes_nothing(browser_for, alice, cluster, submit):
    job = submit(alice)
    response = post(browser_for(alice), "dashboard:tradeoff-preview", SETTINGS)
    assert response.status_code == 200, response.content
    data = response.json()
    assert [(m["job"], m["kind"]) for m in data["moves"]] == [(job.pk, "place")]
    assert data["proposed"]["placed"] == 1 and data["current"]["placed"] == 0 and data["energy_weight"] == 0.5
    assert data["proposed"]["power_w"] > 0
    assert not Allocation.objects.exists() and not SolveRun.objects.exists()
    assert SolverConfig.load().base_energy_weight == 1.0


def test_preview_hides_other_tenants_jobs(browser_for, alice, bob, cluster, submit):
    submit(bob, max_gpus=1)
    data = post(browser_for(alice), "dashboard:tradeoff-preview", SETTINGS).json()
    assert data["moves"] == [] and data["hidden_moves"] == 1


def test_non_staff_cannot_apply(browser_for, alice, cluster):
    response = post(browser_for(alice), "dashboard:tradeoff-apply", SETTINGS)
    assert response.status_code == 403
    assert SolverConfig.load().base_energy_weight == 1.0 and not SolverConfigChange.objects.exists()


def test_staff_apply_changes_the_live_settings_and_is_audited(browser_for, staff, cluster):
    response = post(browser_for(staff), "dashboard:tradeoff-apply", SETTINGS)
    assert response.status_code == 200 and response.json() == SETTINGS
    config = SolverConfig.load()
    assert (config.base_energy_weight, config.adaptive_weight, config.load_window, config.throughput_value_w) == (0.5, False, 10, 100.0)
    changes = {(c.field, c.old_value, c.new_value, c.changed_by_id) for c in SolverConfigChange.objects.all()}
    assert changes == {
        ("base_energy_weight", "1.0", "0.5", staff.pk), ("adaptive_weight", "True", "False", staff.pk),
        ("load_window", "20", "10", staff.pk), ("throughput_value_w", "0.0", "100.0", staff.pk),
    }


@pytest.mark.parametrize("body, field", [
    ({**SETTINGS, "base_energy_weight": -1}, "base_energy_weight"),
    ({**SETTINGS, "load_window": 0}, "load_window"),
    ({**SETTINGS, "throughput_value_w": "lots"}, "throughput_value_w"),
    ({k: v for k, v in SETTINGS.items() if k != "adaptive_weight"}, "adaptive_weight"),
    ({**SETTINGS, "solver": "random"}, "solver"),
])
@pytest.mark.parametrize("endpoint", ["dashboard:tradeoff-preview", "dashboard:tradeoff-apply"])
def test_bad_settings_are_400_with_field_messages(browser_for, staff, cluster, body, field, endpoint):
    response = post(browser_for(staff), endpoint, body)
    assert response.status_code == 400 and field in response.json()
    assert not SolverConfigChange.objects.exists()


def test_session_posts_need_the_csrf_token(browser_for, staff, cluster):
    client = browser_for(staff, csrf_checks=True)
    assert post(client, "dashboard:tradeoff-apply", SETTINGS).status_code == 403
    assert post(client, "dashboard:tradeoff-preview", SETTINGS).status_code == 403
    assert not SolverConfigChange.objects.exists()


def test_anonymous_gets_no_trade_off_data(client, db):
    assert client.get(reverse("dashboard:tradeoff-sweep")).status_code in (401, 403)
    assert post(client, "dashboard:tradeoff-preview", SETTINGS).status_code in (401, 403)


def test_old_sweeps_are_pruned_and_their_late_points_skipped(cluster, dispatched, monkeypatch):
    monkeypatch.setattr(services, "SWEEPS_KEPT", 2)
    ids = []
    for weight in (1.0, 2.0, 3.0):
        SolverConfig.objects.update_or_create(pk=1, defaults={"migration_cost_w": weight})  # another state each time
        ids.append(services.tradeoff_sweep_for_current_state().pk)
    assert sorted(TradeoffSweep.objects.values_list("pk", flat=True)) == ids[1:]
    assert services.tradeoff_point_solve(sweep_id=ids[0], index=0) is None
