"""POST /api/gpu-types/<name>/profile/ (staff start a campaign: trigger admin) and its
refusals, which write nothing; GET /api/profiling-campaigns/."""
import pytest

from scheduler.models import CampaignState, Job, ProfilingCampaign

pytestmark = pytest.mark.django_db


def profile(client, name="v100", body=None):
    return client.post(f"/api/gpu-types/{name}/profile/", body or {}, format="json")


def nothing_written():
    return not ProfilingCampaign.objects.exists() and not Job.objects.exists()


def test_staff_start_a_campaign(fake_suite, catalog, v100_node, staff, client_for):
    v100_node.driver_version = "550.54.14"
    v100_node.save()
    answer = profile(client_for(staff))
    assert answer.status_code == 201, answer.json()
    body = answer.json()
    assert (body["gpu_type"], body["trigger"], body["state"], body["requested_by"]) == (
        "v100", "admin", "pending", "operator")
    assert body["driver_version"] == "550.54.14"  # what the type's nodes run
    assert len(body["jobs"]) == 2 and body["cases_done"] == []


def test_only_staff_may(fake_suite, catalog, v100_node, alice, client_for):
    assert profile(client_for(alice)).status_code == 403
    assert nothing_written()


def test_an_unknown_type_is_404(fake_suite, catalog, v100_node, staff, client_for):
    assert profile(client_for(staff), "h900").status_code == 404
    assert nothing_written()


def test_a_body_with_fields_is_400(fake_suite, catalog, v100_node, staff, client_for):
    answer = profile(client_for(staff), body={"cases": ["x"]})
    assert answer.status_code == 400 and answer.json() == {"cases": ["Unknown field."]}
    assert nothing_written()


def test_a_type_no_node_has_is_400(fake_suite, catalog, k80, v100_node, staff, client_for):
    answer = profile(client_for(staff), "k80")
    assert answer.status_code == 400
    assert answer.json() == {"gpu_type": ["No node has a healthy k80 GPU: a campaign runs on the type's own GPUs."]}
    assert nothing_written()


def test_no_case_in_the_catalog_is_400(fake_suite, v100_node, staff, client_for):
    answer = profile(client_for(staff))
    assert answer.status_code == 400 and "load_reference_catalog" in answer.json()["gpu_type"][0]
    assert nothing_written()


def test_an_open_campaign_is_409_and_a_closed_one_is_no_obstacle(fake_suite, catalog, v100_node, staff, client_for):
    assert profile(client_for(staff)).status_code == 201
    answer = profile(client_for(staff))
    assert answer.status_code == 409
    assert answer.json()["detail"] == "GPU type v100 already has an open profiling campaign; wait for it to end."
    assert ProfilingCampaign.objects.count() == 1 and Job.objects.count() == 2
    ProfilingCampaign.objects.update(state=CampaignState.DONE)
    assert profile(client_for(staff)).status_code == 201  # an admin may always ask again


def test_everyone_signed_in_reads_the_campaigns(fake_suite, catalog, v100_node, staff, alice, client_for):
    profile(client_for(staff))
    listed = client_for(alice).get("/api/profiling-campaigns/")
    assert listed.status_code == 200
    [campaign] = listed.json()["results"]
    assert campaign["gpu_type"] == "v100" and len(campaign["cases"]) == 6
    assert client_for(alice).get(f"/api/profiling-campaigns/{campaign['id']}/").json()["id"] == campaign["id"]
    assert client_for(alice).post("/api/profiling-campaigns/", {}, format="json").status_code == 405
    assert client_for(alice).get("/api/profiling-campaigns/?state=done").json()["results"] == []


def test_staff_cancel_an_open_campaign_and_its_unfinished_jobs(fake_suite, catalog, v100_node, staff, alice,
                                                                client_for):
    campaign = profile(client_for(staff)).json()
    cancel = f"/api/profiling-campaigns/{campaign['id']}/cancel/"
    assert client_for(alice).post(cancel, {}, format="json").status_code == 403  # staff only, and nothing changed
    assert ProfilingCampaign.objects.get().state == "pending" and not Job.objects.filter(state="cancelled").exists()
    answer = client_for(staff).post(cancel, {}, format="json")
    assert answer.status_code == 200, answer.json()
    body = answer.json()
    assert body["state"] == "cancelled" and body["finished_at"] and body["message"].startswith("Cancelled by operator")
    assert sorted(Job.objects.values_list("state", flat=True)) == ["cancelled", "cancelled"]
    assert all("Its profiling campaign was cancelled." in job.state_reason for job in Job.objects.all())
    assert not ProfilingCampaign.objects.get().gpu_type.profiled_at  # not profiled
    before = list(ProfilingCampaign.objects.values())
    again = client_for(staff).post(cancel, {}, format="json")
    assert again.status_code == 400 and "state" in again.json()  # it has ended: refused, nothing written
    assert list(ProfilingCampaign.objects.values()) == before
    assert profile(client_for(staff)).status_code == 201  # a cancelled campaign is no obstacle to a new one
