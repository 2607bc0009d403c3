"""Services in the admin: listed with state, bound, rate, P99 and replicas (target / live); what
the rounds derive and the replicas report is read-only, what the form may change is written
alone and sent to open pages; none is added or deleted here; traffic reports are read-only."""
from gogh_web.events.models import Event
from scheduler.models import Service, ServiceTraffic
from scheduler.serving.traffic import service_traffic_record

# `as` marks the fixtures re-exported, for pytest to find by name.
from .console import detector as detector, ranker as ranker


def test_the_list_shows_state_bound_traffic_and_replicas(client, root, ranker, detector):
    listing = client.get("/admin/scheduler/service/").content.decode()
    assert "ranker" in listing and "detector" in listing
    assert "2 / 1 (1-4)" in listing  # target 2, one replica running
    for figure in ("120", "42.0", "31.5", "50.0"):
        assert f">{figure}<" in listing, figure


def test_derived_fields_are_read_only_and_an_edit_writes_only_what_changed(client, root, ranker,
                                                                           django_capture_on_commit_callbacks):
    url = f"/admin/scheduler/service/{ranker.pk}/change/"
    page = client.get(url).content.decode()
    for field in ("request_rate_rps", "p99_ms", "forecast_rps", "calibration", "replicas_target", "latency_bound_ms",
                  "min_replicas", "workload", "tenant", "environment"):
        assert f'name="{field}"' not in page, field
    assert 'name="name"' in page and 'name="priority"' in page
    Service.objects.filter(pk=ranker.pk).update(request_rate_rps=300.0)  # a report after the page was loaded
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {"name": "ranker-eu", "priority": "5", "command": "", "_save": "Save"})
    assert response.status_code == 302, response.content.decode()[:2000]
    ranker.refresh_from_db()
    assert (ranker.name, ranker.priority, ranker.request_rate_rps, ranker.latency_bound_ms) == ("ranker-eu", 5, 300.0,
                                                                                              50.0)
    assert Event.objects.get(kind="service").data["name"] == "ranker-eu"


def test_services_are_neither_added_nor_deleted_here(client, root, ranker):
    assert client.get("/admin/scheduler/service/add/").status_code == 403
    assert client.post(f"/admin/scheduler/service/{ranker.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Service.objects.filter(pk=ranker.pk).exists()


def test_traffic_reports_are_listed_and_read_only(client, root, ranker):
    replica = ranker.replicas.filter(state="running").get()
    sample = service_traffic_record(job=replica, request_rate_rps=88.5, p99_ms=33.25)
    listing = client.get("/admin/scheduler/servicetraffic/").content.decode()
    assert ">88.5<" in listing and ">33.2<" in listing
    response = client.post(f"/admin/scheduler/servicetraffic/{sample.pk}/change/", {"request_rate_rps": "1"})
    assert response.status_code == 403
    assert ServiceTraffic.objects.get(pk=sample.pk).request_rate_rps == 88.5
    assert client.get("/admin/scheduler/servicetraffic/add/").status_code == 403
