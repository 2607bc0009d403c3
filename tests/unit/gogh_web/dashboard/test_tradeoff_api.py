"""Trade-off endpoints: the sweep cached per cluster state, preview as a dry run, apply for
staff only and audited, bad input as 400 with field messages, CSRF on session POSTs."""
import json
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from gogh_web.dashboard import selectors, services, tradeoff
from gogh_web.dashboard.models import TradeoffPoint, TradeoffSweep
from scheduler.models import Allocation, SolveRun, SolverConfig, SolverConfigChange
from scheduler.services import job_transition

SETTINGS = {"base_energy_weight": 0.5, "adaptive_weight": False, "load_window": 10, "throughput_value_w": 100.0}


def post(client, name, body=None):
    return client.post(reverse(name), json.dumps(body or {}), content_type="application/json")


def sweep_of_now(client):
    return post(client, "dashboard:tradeoff-sweep").json()


@pytest.fixture
def dispatched(monkeypatch):
    """Sweeps sent to the workers (the Celery group is replaced by a record of its id)."""
    sent = []
    monkeypatch.setattr(services, "_dispatch_sweep", sent.append)
    return sent


def test_sweep_is_created_once_per_cluster_state(browser_for, alice, cluster, submit, dispatched,
                                                  django_capture_on_commit_callbacks):
    client = browser_for(alice)
    with django_capture_on_commit_callbacks(execute=True):
        first = sweep_of_now(client)
    assert (
        first["status"] == "solving"
        and first["points"] == []
        and first["points_expected"] == len(tradeoff.sweep_grid()) == 21
    )
    assert dispatched == [first["sweep"]]
    with django_capture_on_commit_callbacks(execute=True):
        again = sweep_of_now(client)
    assert again["sweep"] == first["sweep"] and dispatched == [first["sweep"]]  # cached: nothing sent
    submit(alice)
    with django_capture_on_commit_callbacks(execute=True):
        changed = sweep_of_now(client)
    assert changed["sweep"] != first["sweep"] and dispatched == [first["sweep"], changed["sweep"]]
    assert TradeoffSweep.objects.count() == 2


def test_a_new_round_alone_keeps_the_cached_sweep(browser_for, alice, cluster, dispatched):
    client = browser_for(alice)
    first = sweep_of_now(client)["sweep"]
    SolveRun.objects.create(trigger="periodic", solver="ilp", status="optimal", load=0.4)
    assert sweep_of_now(client)["sweep"] == first


@pytest.mark.usefixtures("default_power_limits")  # figures hand-checked at the default limit
def test_points_solved_by_the_task_complete_the_sweep(browser_for, alice, cluster, submit, dispatched):
    submit(alice, min_throughput=3.0)  # one GPU: 4 steps/s, two: 7.5 (surplus capped at 1 x T_min)
    client = browser_for(alice)
    sweep_id = sweep_of_now(client)["sweep"]
    for setting in tradeoff.sweep_grid():
        services.tradeoff_point_solve(sweep_id=sweep_id, index=setting.index)
    services.tradeoff_point_solve(sweep_id=sweep_id, index=0)  # a redelivered task adds nothing
    assert TradeoffPoint.objects.filter(sweep_id=sweep_id).count() == 21
    data = client.get(reverse("dashboard:tradeoff-sweep-detail", args=[sweep_id])).json()
    assert data["status"] == "complete" and len(data["points"]) == 21 and data["failed_points"] == 0
    low, high = data["points"][0], data["points"][6]  # energy weights 0.05 and 4, fairness weight 0
    assert (low["energy_weight"], low["fairness_weight"]) == (0.05, 0.0) and high["energy_weight"] == 4.0
    assert sorted({p["fairness_weight"] for p in data["points"]}) == [0.0, 0.5, 2.0]
    assert all(p["placed"] == 1 for p in data["points"])
    # at a low weight the surplus is worth the second GPU; at a high one the job takes one GPU
    assert low["throughput"] == pytest.approx(7.5) and high["throughput"] == pytest.approx(4.0)
    assert low["power_w"] > high["power_w"]
    assert data["current"] == {"throughput": 0.0, "power_w": 0.0, "fairness": 1.0, "placed": 0}
    markers = {(p["throughput"], p["power_w"], p["jain"]) for p in data["points"]}
    assert data["distinct_points"] == len(markers) >= 2
    assert sum(1 / p["shared_by"] for p in data["points"]) == pytest.approx(len(markers))


def solved_sweep(client):
    sweep_id = sweep_of_now(client)["sweep"]
    for setting in tradeoff.sweep_grid():
        services.tradeoff_point_solve(sweep_id=sweep_id, index=setting.index)
    return client.get(reverse("dashboard:tradeoff-sweep-detail", args=[sweep_id])).json()


@pytest.mark.usefixtures("default_power_limits")  # figures hand-checked at the default limit
def test_a_sweep_whose_settings_all_give_one_decision_says_so(browser_for, alice, cluster, submit, dispatched):
    """Only two GPUs meet T_min 5 (one gives 4 steps/s): every setting places the job on both,
    so the 21 points are one marker and the page is told, not left to show "21 points"."""
    submit(alice, min_throughput=5.0)
    data = solved_sweep(browser_for(alice))
    assert data["status"] == "complete" and len(data["points"]) == 21
    assert {(p["throughput"], p["placed"]) for p in data["points"]} == {(7.5, 1)}
    assert data["distinct_points"] == 1 and all(p["shared_by"] == 21 for p in data["points"])


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


@pytest.mark.usefixtures("default_power_limits")  # figures hand-checked at the default limit
def test_preview_hides_other_tenants_jobs(browser_for, alice, bob, cluster, submit):
    submit(bob, max_gpus=1)
    data = post(browser_for(alice), "dashboard:tradeoff-preview", SETTINGS).json()
    assert data["moves"] == [] and data["hidden_moves"] == 1
    assert data["hidden_change"]["throughput"] == pytest.approx(4.0) == data["proposed"]["throughput"]


def placed_on(job, gpus, stored_throughput, placed_ago_s=3600):
    """The job placed on `gpus` by an earlier round whose predictions said `stored_throughput`,
    `placed_ago_s` ago (by default out of its move cool-down, so a round may move it)."""
    job = job_transition(job=job, to="placed")
    job.placed_at = timezone.now() - timedelta(seconds=placed_ago_s)
    job.save(update_fields=["placed_at"])
    for gpu in gpus:
        Allocation.objects.create(job=job, gpu=gpu, start=job.placed_at, predicted_throughput=stored_throughput,
                                  predicted_power_w=999.0)
    return job


@pytest.mark.usefixtures("default_power_limits")  # figures hand-checked at the default limit
def test_preview_compares_by_todays_predictions_and_its_moves_account_for_the_change(browser_for, alice, cluster,
                                                                                       submit):
    """The figures stored with an allocation are the placing round's predictions (here 9 steps/s,
    999 W per GPU); today's say 4 steps/s and 250 W on one V100. Kept where it is, the job shows
    no move and no change; moved to two GPUs, its move carries the whole difference."""
    job = placed_on(submit(alice, min_throughput=3.0), cluster[:1], stored_throughput=9.0)
    kept = post(browser_for(alice), "dashboard:tradeoff-preview", {**SETTINGS, "base_energy_weight": 4.0}).json()
    assert kept["moves"] == [] and kept["current"] == kept["proposed"]
    assert (kept["current"]["throughput"], kept["current"]["power_w"]) == (4.0, 250.0)
    moved = post(browser_for(alice), "dashboard:tradeoff-preview", {**SETTINGS, "base_energy_weight": 0.05}).json()
    [move] = moved["moves"]
    assert (move["job"], move["kind"], move["from_gpus"], move["from_type"]) == (
        job.pk, "move", [cluster[0].pk], "v100")
    assert (move["from_throughput"], move["to_throughput"], move["from_power_w"], move["to_power_w"]) == (
        4.0, 7.5, 250.0, 500.0)
    assert moved["proposed"]["throughput"] - moved["current"]["throughput"] == pytest.approx(3.5)


def test_preview_moves_no_job_within_its_move_cool_down(browser_for, alice, cluster, submit):
    """Placed a minute ago (cool-down 600 s), the job stays where it is at any setting."""
    placed_on(submit(alice, min_throughput=3.0), cluster[:1], stored_throughput=9.0, placed_ago_s=60)
    pinned = post(browser_for(alice), "dashboard:tradeoff-preview", {**SETTINGS, "base_energy_weight": 0.05}).json()
    assert pinned["moves"] == [] and pinned["current"] == pinned["proposed"]


def test_the_sweeps_current_point_uses_the_sweeps_predictions(browser_for, alice, cluster, submit, dispatched):
    placed_on(submit(alice, min_throughput=3.0), cluster[:1], stored_throughput=9.0)
    data = sweep_of_now(browser_for(alice))
    assert data["current"] == {"throughput": 4.0, "power_w": 250.0, "fairness": 1.0, "placed": 1}
    assert data["tenants"] == 1


def test_non_staff_cannot_apply(browser_for, alice, cluster):
    response = post(browser_for(alice), "dashboard:tradeoff-apply", SETTINGS)
    assert response.status_code == 403
    assert SolverConfig.load().base_energy_weight == 1.0 and not SolverConfigChange.objects.exists()


def test_staff_apply_changes_the_live_settings_and_is_audited(browser_for, staff, cluster):
    response = post(browser_for(staff), "dashboard:tradeoff-apply", SETTINGS)
    assert response.status_code == 200 and response.json() == SETTINGS
    config = SolverConfig.load()
    assert (config.base_energy_weight, config.adaptive_weight, config.load_window, config.throughput_value_w) == (
        0.5,
        False,
        10,
        100.0,
    )
    changes = {(c.field, c.old_value, c.new_value, c.changed_by_id) for c in SolverConfigChange.objects.all()}
    assert changes == {
        ("base_energy_weight", "1.0", "0.5", staff.pk), ("adaptive_weight", "True", "False", staff.pk),
        ("load_window", "20", "10", staff.pk), ("throughput_value_w", "0.0", "100.0", staff.pk),
    }


@pytest.mark.parametrize("body, field", [
    ({**SETTINGS, "base_energy_weight": -1}, "base_energy_weight"),
    ({**SETTINGS, "load_window": 0}, "load_window"),
    ({**SETTINGS, "throughput_value_w": "lots"}, "throughput_value_w"),
    ({**SETTINGS, "adaptive_weight": "maybe"}, "adaptive_weight"),
    ({**SETTINGS, "base_energy_weight": True}, "base_energy_weight"),  # was read as 1.0
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


def test_node_agents_get_no_trade_off_endpoints(client_for, agent, cluster, dispatched):
    """An agent's token reports telemetry; it could queue 21-solve sweeps on the workers."""
    client = client_for(agent)
    assert client.post(reverse("dashboard:tradeoff-sweep"), format="json").status_code == 403
    assert client.post(reverse("dashboard:tradeoff-preview"), SETTINGS, format="json").status_code == 403
    assert not TradeoffSweep.objects.exists() and dispatched == []


def test_anonymous_gets_no_trade_off_data(client, db):
    assert post(client, "dashboard:tradeoff-sweep").status_code in (401, 403)
    assert post(client, "dashboard:tradeoff-preview", SETTINGS).status_code in (401, 403)


def test_old_sweeps_are_pruned_and_their_late_points_skipped(cluster, dispatched, monkeypatch):
    monkeypatch.setattr(services, "SWEEPS_KEPT", 2)
    ids = []
    for weight in (1.0, 2.0, 3.0):
        SolverConfig.objects.update_or_create(pk=1, defaults={"migration_cost_w": weight})  # another state each time
        ids.append(services.tradeoff_sweep_for_current_state()[0].pk)
    assert sorted(TradeoffSweep.objects.values_list("pk", flat=True)) == ids[1:]
    assert services.tradeoff_point_solve(sweep_id=ids[0], index=0) is None


# --- Opening the page changes nothing; only the page's POST starts a sweep


def test_reading_a_sweep_is_read_only_and_get_starts_nothing(browser_for, alice, cluster, dispatched):
    client = browser_for(alice)
    assert client.get(reverse("dashboard:tradeoff-sweep")).status_code == 405
    assert client.get(reverse("dashboard:tradeoff")).status_code == 200
    assert not TradeoffSweep.objects.exists() and dispatched == []
    created = post(client, "dashboard:tradeoff-sweep")
    assert created.status_code == 201
    cached = post(client, "dashboard:tradeoff-sweep")
    assert cached.status_code == 200 and cached.json()["sweep"] == created.json()["sweep"]
    detail = client.get(reverse("dashboard:tradeoff-sweep-detail", args=[created.json()["sweep"]]))
    assert detail.status_code == 200 and detail.json()["status"] == "solving"
    assert TradeoffSweep.objects.count() == 1


def test_new_measurements_keep_the_cached_sweep(browser_for, alice, cluster, submit, dispatched, resnet50, v100):
    from django.utils import timezone

    from catalog.models import Measurement

    submit(alice)
    client = browser_for(alice)
    first = sweep_of_now(client)["sweep"]
    Measurement.objects.create(workload=resnet50, gpu_type=v100, num_gpus=1, throughput=4.4, power_w=240,
                               source="telemetry", observed_at=timezone.now())
    assert sweep_of_now(client)["sweep"] == first


# --- Preview: throttled, short time limit


def test_preview_is_throttled_per_user(browser_for, alice, bob, cluster, settings):
    settings.GOGH_DASHBOARD_PREVIEW_RATE = "2/min"
    client = browser_for(alice)
    assert [post(client, "dashboard:tradeoff-preview", SETTINGS).status_code for _ in range(3)] == [200, 200, 429]
    refused = post(client, "dashboard:tradeoff-preview", SETTINGS)
    assert refused.status_code == 429 and "detail" in refused.json()
    assert post(browser_for(bob), "dashboard:tradeoff-preview", SETTINGS).status_code == 200  # per user


def test_preview_solves_with_a_short_time_limit(browser_for, alice, cluster, submit, monkeypatch):
    SolverConfig.objects.update_or_create(pk=1, defaults={"time_limit_s": 600.0})
    submit(alice)
    limits = []
    solve = services._solve
    monkeypatch.setattr(
        services, "_solve", lambda problem: limits.append(problem.settings.time_limit_s) or solve(problem)
    )
    assert post(browser_for(alice), "dashboard:tradeoff-preview", SETTINGS).status_code == 200
    assert limits == [services.PREVIEW_TIME_LIMIT_S]


# --- Only the fields the user changed are applied (or previewed)


def test_apply_of_the_weight_alone_changes_nothing_else(browser_for, staff, cluster):
    response = post(browser_for(staff), "dashboard:tradeoff-apply", {"base_energy_weight": 0.5})
    assert response.status_code == 200
    assert response.json() == {
        "base_energy_weight": 0.5,
        "adaptive_weight": True,
        "load_window": 20,
        "throughput_value_w": 0.0,
    }
    assert [(c.field, c.new_value) for c in SolverConfigChange.objects.all()] == [("base_energy_weight", "0.5")]


def test_apply_of_nothing_is_a_400(browser_for, staff, cluster):
    response = post(browser_for(staff), "dashboard:tradeoff-apply", {})
    assert response.status_code == 400 and "non_field_errors" in response.json()


def test_page_starts_from_the_stored_surplus_value(browser_for, staff, cluster):
    response = browser_for(staff).get(reverse("dashboard:tradeoff"))
    assert response.context["settings"]["throughput_value_w"] == 0.0
    assert b'name="throughput_value_w" type="number" min="0" step="any" value="0.0"' in response.content


def test_preview_keeps_the_fields_not_given(browser_for, alice, cluster, submit, monkeypatch):
    SolverConfig.objects.update_or_create(pk=1, defaults={"load_window": 7, "throughput_value_w": 0.0})
    submit(alice)
    seen = []
    solve = services._solve
    monkeypatch.setattr(services, "_solve", lambda problem: seen.append(problem.settings) or solve(problem))
    assert post(browser_for(alice), "dashboard:tradeoff-preview", {"base_energy_weight": 0.2}).status_code == 200
    (used,) = seen
    assert (used.base_energy_weight, used.load_window, used.throughput_value_w) == (0.2, 7, 0.0)


# --- A sweep ends: failed points, lost points, pruned sweeps


def test_a_raising_point_is_recorded_and_fails_the_sweep(browser_for, alice, cluster, submit, dispatched, monkeypatch,
                                                         django_capture_on_commit_callbacks):
    submit(alice)
    client = browser_for(alice)
    sweep_id = sweep_of_now(client)["sweep"]

    def boom(problem):
        raise RuntimeError("solver crashed")

    solve = services._solve
    monkeypatch.setattr(services, "_solve", boom)
    for setting in tradeoff.sweep_grid():
        assert services.tradeoff_point_solve(sweep_id=sweep_id, index=setting.index).status == services.FAILED_POINT
    data = client.get(reverse("dashboard:tradeoff-sweep-detail", args=[sweep_id])).json()
    assert data["status"] == "failed" and data["points"] == [] and data["failed_points"] == len(tradeoff.sweep_grid())
    monkeypatch.setattr(services, "_solve", solve)
    with django_capture_on_commit_callbacks(execute=True):
        retried = post(client, "dashboard:tradeoff-sweep")  # asking again replaces the failed sweep
    assert retried.status_code == 201 and retried.json()["sweep"] != sweep_id and retried.json()["status"] == "solving"
    assert dispatched[-1] == retried.json()["sweep"]


def test_a_point_that_is_not_finite_is_recorded_as_failed(browser_for, alice, cluster, submit, dispatched, monkeypatch):
    """A NaN fairness failed the insert (NOT NULL on SQLite), so the point was never stored and
    the sweep waited for it until its timeout."""
    submit(alice)
    sweep_id = sweep_of_now(browser_for(alice))["sweep"]
    monkeypatch.setattr(tradeoff, "allocation_point",
                        lambda problem, allocation: tradeoff.OperatingPoint(1.0, 1.0, float("nan"), 1))
    point = services.tradeoff_point_solve(sweep_id=sweep_id, index=0)
    assert point.status == services.FAILED_POINT and point.jain == 0.0


def test_a_sweep_whose_points_never_arrive_fails_after_its_timeout(browser_for, alice, cluster, dispatched,
                                                                   django_capture_on_commit_callbacks):
    client = browser_for(alice)
    with django_capture_on_commit_callbacks(execute=True):
        sweep_id = sweep_of_now(client)["sweep"]  # the dispatch went nowhere: no point will come
    sweep = TradeoffSweep.objects.get(pk=sweep_id)
    timeout = tradeoff.sweep_timeout_s(sweep.points_expected, sweep.problem["settings"]["time_limit_s"])
    assert selectors.sweep_status(sweep, now=sweep.created_at + timedelta(seconds=timeout - 1)) == "solving"
    assert selectors.sweep_status(sweep, now=sweep.created_at + timedelta(seconds=timeout + 1)) == "failed"
    TradeoffSweep.objects.filter(pk=sweep_id).update(created_at=sweep.created_at - timedelta(seconds=timeout + 1))
    assert client.get(reverse("dashboard:tradeoff-sweep-detail", args=[sweep_id])).json()["status"] == "failed"
    with django_capture_on_commit_callbacks(execute=True):
        assert post(client, "dashboard:tradeoff-sweep").json()["sweep"] != sweep_id  # re-dispatched as a new sweep
    assert len(dispatched) == 2


def test_a_sweep_pruned_during_a_point_solve_is_skipped(browser_for, alice, cluster, dispatched, monkeypatch):
    sweep_id = sweep_of_now(browser_for(alice))["sweep"]
    solve = services._solve

    def pruned_meanwhile(problem):
        TradeoffSweep.objects.filter(pk=sweep_id).delete()
        return solve(problem)

    monkeypatch.setattr(services, "_solve", pruned_meanwhile)
    assert services.tradeoff_point_solve(sweep_id=sweep_id, index=0) is None
    assert not TradeoffPoint.objects.exists()


def test_a_point_stored_while_a_sweep_is_read_cannot_make_it_complete_without_that_point(
        browser_for, alice, cluster, submit, dispatched, monkeypatch):
    """The last point lands between the read of the points and the status (seen in CI: the page
    got "complete" with 20 of 21 points and stopped polling): the status is that of the points
    sent with it, so the page polls again and gets all 21."""
    submit(alice, min_throughput=3.0)
    client = browser_for(alice)
    sweep_id = sweep_of_now(client)["sweep"]
    *first, last = tradeoff.sweep_grid()
    for setting in first:
        services.tradeoff_point_solve(sweep_id=sweep_id, index=setting.index)
    real_status = selectors.sweep_status

    def status_after_the_last_point_lands(sweep, **kwargs):
        if not TradeoffPoint.objects.filter(sweep_id=sweep_id, index=last.index).exists():
            services.tradeoff_point_solve(sweep_id=sweep_id, index=last.index)
        return real_status(sweep, **kwargs)

    monkeypatch.setattr(selectors, "sweep_status", status_after_the_last_point_lands)
    url = reverse("dashboard:tradeoff-sweep-detail", args=[sweep_id])
    data = client.get(url).json()
    assert (data["status"], len(data["points"])) == ("solving", 20)
    data = client.get(url).json()
    assert (data["status"], len(data["points"])) == ("complete", 21)
