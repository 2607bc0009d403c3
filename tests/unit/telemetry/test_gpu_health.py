"""Each GPU's health signals kept as its latest on ingest, with notes on those that warn
(telemetry/gpu_health.py, docs/gpu_health.md)."""
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from telemetry.gpu_health import (
    BRAKED_SPEED,
    SUSTAINED_S,
    board_plan,
    braked_now,
    cleared,
    clock_speed,
    health_of,
    plans_slower,
)
from telemetry.models import Gpu

from .test_samples_api import URL, sample


def test_steady_readings_give_no_notes():
    health = health_of({"temperature_c": 60, "ecc_corrected": 4, "ecc_uncorrected": 0, "retired_pages": 0,
                        "throttle_reasons": 0x1 | 0x4}, {})
    assert health["notes"] == []
    assert health["throttle_reasons"] == ["idle", "software power cap"]  # shown, not noted: the plan's own cap
    assert health["first"] == {"ecc_uncorrected": 0, "retired_pages": 0}


def test_brakes_heat_and_rising_counts_are_noted():
    before = health_of({"ecc_uncorrected": 1, "remapped_rows": 2}, {})
    after = health_of({"temperature_c": 91, "ecc_uncorrected": 3, "remapped_rows": 2, "throttle_reasons": 0x80},
                      before)
    assert after["notes"] == ["clocks held back: power brake", "hot: 91 C (noted from 85 C)",
                              "ecc uncorrected rose from 1 to 3"]
    assert after["first"] == {"ecc_uncorrected": 1, "remapped_rows": 2}


def test_a_signal_the_board_does_not_report_is_absent():
    assert health_of({"temperature_c": None, "throttle_reasons": None}, {}) == {
        "throttle_reasons": [], "first": {}, "notes": []
    }


def test_an_upload_keeps_the_newest_readings_as_the_gpus_health(client_for, agent, node1):
    now = timezone.now()
    older = {**sample(), "ts": (now - timedelta(seconds=5)).isoformat(), "temperature_c": 99}
    newer = {**sample(), "ts": (now - timedelta(seconds=1)).isoformat(), "throttle_reasons": 0x40,
             "remapped_rows": 0}
    response = client_for(agent).post(URL, {"samples": [newer, older]}, format="json")
    assert response.status_code == 201, response.content
    health = Gpu.objects.get(uuid="GPU-node1-0").health
    assert health["temperature_c"] == 64 and health["remapped_rows"] == 0
    assert health["notes"] == ["clocks held back: hardware thermal slowdown"]
    assert Gpu.objects.get(uuid="GPU-node1-1").health == {}


def test_a_refused_batch_keeps_no_health(client_for, agent, node1):
    bad = sample(throttle_reasons=-1)
    response = client_for(agent).post(URL, {"samples": [bad]}, format="json")
    assert response.status_code == 400 and "samples[0].throttle_reasons" in response.json()
    assert not Gpu.objects.exclude(health={}).exists()


# --- The features the plan takes from health (hand-checked)

T0 = timezone.now()


def braked(seconds, **fields):
    return {"ts": T0 + timedelta(seconds=seconds), "throttle_reasons": 0x40, "sm_clock_mhz": 765.0,
            "sm_clock_max_mhz": 1530.0, **fields}


def test_rising_error_counts_put_a_board_at_risk_with_the_reason():
    seen = health_of({"ecc_uncorrected": 0, "retired_pages": 1, "remapped_rows": 2}, {})
    assert "at_risk" not in seen and plans_slower(seen) == (1.0, "")
    later = health_of({"ecc_uncorrected": 0, "retired_pages": 1, "remapped_rows": 5}, seen)
    assert later["at_risk"] == "remapped rows rose from 2 to 5"
    assert plans_slower(later) == (1.0, "at risk: remapped rows rose from 2 to 5")  # its speed untouched


def test_a_board_is_planned_at_the_lower_speed_and_flagged_by_either_the_tracker_or_its_health():
    """One rule for the round and simulate: min(learnt, what health allows); slow if either flags;
    at risk only on the health's rising error counts (a slow or braked board is not expected to fail)."""
    braked = {"throttled_speed": 0.6, "throttle_reasons": ["hardware slowdown"]}
    assert board_plan(0.95, False, {}) == (0.95, False, False)
    assert board_plan(0.88, True, {}) == (0.88, True, False)
    assert board_plan(0.95, False, braked) == (0.6, True, False)
    assert board_plan(0.5, False, braked) == (0.5, True, False)  # the learnt speed is lower still
    assert board_plan(0.97, False, {"at_risk": "remapped rows rose from 0 to 1"}) == (0.97, True, True)
    assert board_plan(1.02, False, {}) == (1.0, False, False)  # a board faster than its type is planned at 1


def test_one_braked_sample_changes_nothing_a_sustained_brake_plans_the_clock_ratio():
    first = health_of(braked(0), {})
    assert first["braked_since"] == T0.isoformat() and "throttled_speed" not in first
    assert plans_slower(first) == (1.0, "")
    almost = health_of(braked(SUSTAINED_S - 1), first)
    assert "throttled_speed" not in almost and almost["braked_since"] == T0.isoformat()
    held = health_of(braked(SUSTAINED_S), almost)
    assert held["throttled_speed"] == 0.5  # 765 of 1530 MHz
    assert plans_slower(held) == (0.5, "throttled: hardware thermal slowdown")
    assert held["notes"][-1] == "planned at 0.50 of its speed: braked 300 s"


def test_a_brake_that_lifts_starts_over():
    held = health_of(braked(SUSTAINED_S), health_of(braked(0), {}))
    free = health_of({"ts": T0 + timedelta(seconds=SUSTAINED_S + 1), "throttle_reasons": 0x4}, held)
    assert "braked_since" not in free and "throttled_speed" not in free and plans_slower(free) == (1.0, "")
    again = health_of(braked(SUSTAINED_S + 2), free)
    assert "throttled_speed" not in again  # a new run of brakes, not the old one's time


def test_impossible_or_missing_clocks_are_refused_for_nvmls_floor():
    start = health_of(braked(0), {})
    above = health_of(braked(SUSTAINED_S, sm_clock_mhz=1600.0), start)
    assert above["throttled_speed"] == BRAKED_SPEED
    assert above["notes"][-1] == ("planned at 0.50 of its speed: braked, clocks refused "
                                  "(SM 1600 MHz of at most 1530 MHz)")
    missing = health_of(braked(SUSTAINED_S, sm_clock_max_mhz=None), start)
    assert missing["throttled_speed"] == BRAKED_SPEED
    assert missing["notes"][-1] == "planned at 0.50 of its speed: braked, clocks not reported"
    assert clock_speed(-1.0, 1530.0)[0] == BRAKED_SPEED and clock_speed(100.0, 0.0)[0] == BRAKED_SPEED
    assert clock_speed(1530.0, 1530.0) == (1.0, None)


def test_a_software_power_cap_is_the_plan_not_a_brake():
    capped = {"ts": T0, "throttle_reasons": 0x4 | 0x1, "sm_clock_mhz": 900.0, "sm_clock_max_mhz": 1530.0}
    later = health_of({**capped, "ts": T0 + timedelta(seconds=3600)}, health_of(capped, {}))
    assert "braked_since" not in later and plans_slower(later) == (1.0, "")


def test_a_batch_whose_clock_is_above_its_maximum_is_refused_and_keeps_no_health(client_for, agent, node1):
    bad = sample(sm_clock_mhz=1600, sm_clock_max_mhz=1530, throttle_reasons=0x40)
    response = client_for(agent).post(URL, {"samples": [bad]}, format="json")
    assert response.status_code == 400
    assert response.json() == {
        "samples[0].sm_clock_mhz": ["1600 MHz is above the board's maximum SM clock, 1530 MHz."]
    }
    assert not Gpu.objects.exclude(health={}).exists()


def test_uploads_braked_for_the_sustained_time_plan_the_board_slower(client_for, agent, node1):
    now = timezone.now()
    for seconds_ago in (SUSTAINED_S + 10, 0):
        body = {**sample(), "ts": (now - timedelta(seconds=seconds_ago)).isoformat(), "throttle_reasons": 0x8,
                "sm_clock_mhz": 1224, "sm_clock_max_mhz": 1530}
        assert client_for(agent).post(URL, {"samples": [body]}, format="json").status_code == 201
    health = Gpu.objects.get(uuid="GPU-node1-0").health
    assert health["throttled_speed"] == pytest.approx(0.8)
    assert plans_slower(health) == (pytest.approx(0.8), "throttled: hardware slowdown")


def test_the_api_shows_an_uploaded_rise_as_at_risk_with_its_reason(client_for, agent, node1, alice):
    now = timezone.now()
    for seconds_ago, rows in ((60, 2), (0, 5)):
        body = {**sample(), "ts": (now - timedelta(seconds=seconds_ago)).isoformat(), "remapped_rows": rows}
        assert client_for(agent).post(URL, {"samples": [body]}, format="json").status_code == 201
    gpu = Gpu.objects.get(uuid="GPU-node1-0")
    health = client_for(alice).get(f"/api/gpus/{gpu.pk}/").json()["health"]
    assert health["at_risk"] == "remapped rows rose from 2 to 5" and "throttled_speed" not in health
    quiet = client_for(alice).get(f"/api/gpus/{Gpu.objects.get(uuid='GPU-node1-1').pk}/").json()["health"]
    assert "at_risk" not in quiet


def test_a_failing_hardware_xid_puts_a_board_at_risk_for_good():
    quiet = health_of({"xid_count": 0}, {})
    assert "at_risk" not in quiet and quiet["xid_count"] == 0 and quiet["notes"] == []
    fell = health_of({"xid_count": 1, "xid_last": 79}, quiet)
    assert fell["at_risk"] == "XID 79 (GPU has fallen off the bus)"
    assert board_plan(1.0, False, fell) == (1.0, True, True)
    later = health_of({"xid_count": 2, "xid_last": 13}, fell)  # an application's XID after it
    assert later["at_risk"] == "XID 79 (GPU has fallen off the bus)" and later["xid_last"] == 13
    assert "last XID 13 (graphics engine exception)" in later["notes"]
    unread = health_of({"xid_count": None}, later)  # a sample that could not read them keeps what was known
    assert (unread["xid_count"], unread["xid_failing"], unread["at_risk"]) == (2, 79, later["at_risk"])


@pytest.mark.parametrize("code", [13, 31, 43, 119])
def test_an_applications_xid_is_shown_not_held_against_the_board(code):
    health = health_of({"xid_count": 3, "xid_last": code}, {"xid_count": 2})
    assert "at_risk" not in health and health["xid_last"] == code
    assert board_plan(1.0, False, health) == (1.0, False, False)


@pytest.mark.parametrize("code", [48, 63, 64, 74, 79, 92, 93, 94, 95])
def test_each_xid_the_catalogue_puts_on_the_hardware_puts_a_board_at_risk(code):
    assert health_of({"xid_count": 1, "xid_last": code}, {})["at_risk"].startswith(f"XID {code} (")


def test_a_count_that_did_not_move_brings_no_new_xid_and_one_that_fell_means_the_agent_restarted():
    seen = health_of({"xid_count": 4, "xid_last": 13}, {})
    assert "at_risk" not in health_of({"xid_count": 4, "xid_last": 79}, seen)  # no new event: not read
    assert health_of({"xid_count": 1, "xid_last": 48}, seen)["xid_failing"] == 48  # restarted, one new event
    assert "xid_last" not in health_of({"xid_count": 0, "xid_last": None}, {"xid_count": 4})


def test_an_uploaded_hardware_xid_shows_the_board_at_risk(client_for, agent, node1, alice):
    body = sample(xid_count=1, xid_last=48)
    assert client_for(agent).post(URL, {"samples": [body]}, format="json").status_code == 201
    gpu = Gpu.objects.get(uuid="GPU-node1-0")
    health = client_for(alice).get(f"/api/gpus/{gpu.pk}/").json()["health"]
    assert health["at_risk"] == "XID 48 (double bit ECC error)" and health["xid_count"] == 1


@pytest.mark.parametrize(("fields", "path"), [
    ({"xid_count": 0, "xid_last": 79}, "samples[0].xid_last"),
    ({"xid_last": 79}, "samples[0].xid_last"),
    ({"xid_count": 1, "xid_last": 1000}, "samples[0].xid_last"),
    ({"xid_count": 1, "xid_last": 0}, "samples[0].xid_last"),
    ({"xid_count": -1}, "samples[0].xid_count"),
    ({"xid_count": "many"}, "samples[0].xid_count"),
])
def test_an_impossible_xid_is_refused_by_field_and_keeps_no_health(client_for, agent, node1, fields, path):
    response = client_for(agent).post(URL, {"samples": [sample(**fields)]}, format="json")
    assert response.status_code == 400 and list(response.json()) == [path]
    assert not Gpu.objects.exclude(health={}).exists()


def test_clearing_makes_the_counts_now_the_baseline_and_forgets_a_failing_xid():
    risky = health_of({"remapped_rows": 5, "xid_count": 1, "xid_last": 79}, {"first": {"remapped_rows": 2}})
    assert risky["at_risk"] == "remapped rows rose from 2 to 5; XID 79 (GPU has fallen off the bus)"
    at = datetime(2026, 12, 3, tzinfo=UTC)
    fresh = cleared(risky, by="operator", at=at)
    assert "at_risk" not in fresh and "xid_failing" not in fresh and fresh["first"] == {"remapped_rows": 5}
    assert fresh["cleared"] == {"by": "operator", "at": at.isoformat(), "was": risky["at_risk"]}
    assert fresh["notes"] == ["last XID 79 (GPU has fallen off the bus)"]
    again = health_of({"remapped_rows": 5, "xid_count": 1, "xid_last": 79}, fresh)  # the same readings
    assert "at_risk" not in again and again["cleared"] == fresh["cleared"]
    assert health_of({"remapped_rows": 6, "xid_count": 1}, again)["at_risk"] == "remapped rows rose from 5 to 6"
    assert health_of({"xid_count": 2, "xid_last": 94}, again)["at_risk"] == "XID 94 (contained ECC error)"


def test_staff_clear_an_at_risk_flag_through_the_api_others_may_not(client_for, agent, node1, staff, alice):
    for seconds_ago, rows in ((60, 2), (0, 5)):
        body = sample(seconds_ago=seconds_ago, remapped_rows=rows)
        assert client_for(agent).post(URL, {"samples": [body]}, format="json").status_code == 201
    gpu = Gpu.objects.get(uuid="GPU-node1-0")
    url = f"/api/gpus/{gpu.pk}/clear-at-risk/"
    before = Gpu.objects.get(pk=gpu.pk).health
    assert client_for(alice).post(url, {}, format="json").status_code == 403
    assert client_for(staff).post(url, {"why": "serviced"}, format="json").status_code == 400  # no fields taken
    assert Gpu.objects.get(pk=gpu.pk).health == before  # refusals wrote nothing
    response = client_for(staff).post(url, {}, format="json")
    assert response.status_code == 200
    health = response.json()["health"]
    assert "at_risk" not in health and health["first"]["remapped_rows"] == 5 and health["cleared"]["by"] == "operator"
    again = client_for(staff).post(url, {}, format="json")
    assert again.status_code == 409 and "not at risk" in str(again.json())
    assert Gpu.objects.get(pk=gpu.pk).health == health  # the refusal wrote nothing
    upload = sample(remapped_rows=6)
    assert client_for(agent).post(URL, {"samples": [upload]}, format="json").status_code == 201
    assert Gpu.objects.get(pk=gpu.pk).health["at_risk"] == "remapped rows rose from 5 to 6"


def test_braked_now_reads_the_newest_samples_brakes_and_not_gogh_s_own_power_cap():
    assert braked_now({"throttle_reasons": ["power brake"]})
    assert braked_now({"throttle_reasons": ["idle", "hardware thermal slowdown"]})
    assert not braked_now({"throttle_reasons": ["software power cap"]})
    assert not braked_now({}) and not braked_now({"throttle_reasons": None})
