"""The campaigns' admin: read-only records; the GPU types' action starts a campaign (trigger
admin) or says why it did not, and writes nothing then."""
import pytest

from scheduler.models import Job, ProfilingCampaign

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/catalog/gputype/"


def act(client, *types):
    return client.post(CHANGELIST, {"action": "profile", "_selected_action": [t.pk for t in types]}, follow=True)


def messages_of(page) -> list[str]:
    return [str(message) for message in page.context["messages"]]


def test_the_action_starts_a_campaign_and_refuses_what_it_cannot(client, root, fake_suite, catalog, v100_node,
                                                                   v100, k80):
    page = act(client, v100, k80)
    assert page.status_code == 200
    assert messages_of(page) == [
        "Profiling campaign started for v100.",
        "Not started: k80: No node has a healthy k80 GPU: a campaign runs on the type's own GPUs.",
    ]
    campaign = ProfilingCampaign.objects.get()
    assert (campaign.gpu_type, campaign.trigger, campaign.requested_by) == (v100, "admin", root)
    page = act(client, v100)
    assert messages_of(page) == [
        "Not started: GPU type v100 already has an open profiling campaign; wait for it to end."]
    assert ProfilingCampaign.objects.count() == 1 and Job.objects.count() == 2


def test_campaigns_are_listed_and_shown_never_added_changed_or_deleted(client, root, fake_suite, catalog, v100_node,
                                                                      v100):
    act(client, v100)
    campaign = ProfilingCampaign.objects.get()
    listed = client.get("/admin/scheduler/profilingcampaign/")
    assert listed.status_code == 200 and "0 + 1 failed of 6" in listed.content.decode()
    shown = client.get(f"/admin/scheduler/profilingcampaign/{campaign.pk}/change/")
    assert shown.status_code == 200 and "Its workload is not in the catalog." in shown.content.decode()
    assert client.get("/admin/scheduler/profilingcampaign/add/").status_code == 403
    page = f"/admin/scheduler/profilingcampaign/{campaign.pk}"
    assert client.post(f"{page}/change/", {"state": "done"}).status_code == 403
    assert client.post(f"{page}/delete/", {"post": "yes"}).status_code == 403
    assert ProfilingCampaign.objects.get().state == "pending"


def test_the_cancel_action_stops_open_campaigns_and_refuses_ended_ones(client, root, fake_suite, catalog,
                                                                         v100_node, v100):
    act(client, v100)
    campaign = ProfilingCampaign.objects.get()
    page = client.post("/admin/scheduler/profilingcampaign/",
                       {"action": "cancel", "_selected_action": [campaign.pk]}, follow=True)
    assert messages_of(page) == [f"Cancelled campaign(s) {campaign.pk}."]
    campaign.refresh_from_db()
    assert campaign.state == "cancelled" and set(Job.objects.values_list("state", flat=True)) == {"cancelled"}
    page = client.post("/admin/scheduler/profilingcampaign/",
                       {"action": "cancel", "_selected_action": [campaign.pk]}, follow=True)
    assert messages_of(page) == [
        f"Not cancelled: campaign {campaign.pk}: The campaign has ended (cancelled); there is nothing to cancel."]
