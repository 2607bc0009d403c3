"""Node admission: a node an agent registers receives no jobs (no command, no environment)
until an operator approves it; approval and revocation by API, admin and command, audited."""
from io import StringIO

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from catalog.models import Measurement
from gogh_web.events.models import Event
from scheduler import services as scheduler_services
from scheduler.models import Allocation, Job
from telemetry.models import Gpu, Node
from telemetry.services import node_register

from .jobs import placed_job
from .reports import node_report


@pytest.fixture
def rounds(monkeypatch):
    """The scheduling rounds asked for (the debounced send replaced by a recorder)."""
    asked = []
    monkeypatch.setattr(scheduler_services, "_send_round", asked.append)
    return asked


@pytest.fixture
def stranger(gpu_types, make_user, register):
    """A node that a fresh agent token registered through the API: waiting for approval."""
    intruder = make_user("agent-intruder", agent=True)
    response = register(intruder, node_report("rogue"))
    assert response.status_code == 201
    return Node.objects.get(hostname="rogue")


def test_a_node_an_agent_registers_waits_for_approval(stranger, client_for, staff):
    detail = client_for(staff).get(f"/api/nodes/{stranger.pk}/").json()
    assert (detail["approved"], detail["approved_at"], detail["approved_by"]) == (False, None, None)
    assert detail["state"] == "ready"  # alive, but not admitted


def test_an_unapproved_node_is_offered_no_gpus_and_reads_no_assignments(stranger, alice, resnet50, client_for):
    """The probe's node registered with a new agent token received other tenants' jobs, with
    their command and environment, within seconds."""
    Measurement.objects.create(workload=resnet50, gpu_type=Gpu.objects.first().gpu_type, throughput=50,
                               source="reference", observed_at=timezone.now())
    job = scheduler_services.job_submit(owner=alice, workload=resnet50, min_throughput=1, max_gpus=1,
                                        environment={"AWS_SECRET_ACCESS_KEY": "s3cr3t"}).job
    run = scheduler_services.scheduling_round_run(trigger="manual").solve_run
    assert run.num_gpus == 0 and Job.objects.get(pk=job.pk).state == "pending"

    placed_job(alice, resnet50, list(stranger.gpus.all()[:1]))  # even a stray allocation stays unread
    response = client_for(stranger.agent).get(f"/api/nodes/{stranger.pk}/assignments/")
    assert response.status_code == 200 and response.json() == []


def test_approval_by_api_is_staff_only_audited_and_asks_for_a_round(stranger, client_for, staff, alice, rounds,
                                                                    django_capture_on_commit_callbacks):
    url = f"/api/nodes/{stranger.pk}/approve/"
    for outsider in (stranger.agent, alice):
        assert client_for(outsider).post(url, {}, format="json").status_code == 403
    assert Node.objects.get(pk=stranger.pk).approved_at is None
    node_events = Event.objects.filter(kind="node", key=str(stranger.pk))
    seen = node_events.count()

    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(staff).post(url, {}, format="json")
    assert response.status_code == 200
    assert (response.json()["approved"], response.json()["approved_by"]) == (True, "operator")
    assert response.json()["approved_at"] is not None
    entry = LogEntry.objects.get(object_id=str(stranger.pk))
    assert (entry.user, entry.change_message) == (staff, "Approved: the node receives jobs.")
    assert node_events.count() == seen + 1  # pages show the node admitted
    assert rounds == ["node"]
    assert scheduler_services.scheduling_round_run(trigger="manual").solve_run.num_gpus == 4

    again = client_for(staff).post(url, {}, format="json")  # approving twice changes nothing
    assert again.status_code == 200 and LogEntry.objects.count() == 1


def test_revocation_takes_the_jobs_back_exactly_once(node1, client_for, staff, alice, resnet50):
    gpus = list(node1.gpus.order_by("index"))
    job = placed_job(alice, resnet50, gpus[:1])
    url = f"/api/nodes/{node1.pk}/revoke/"
    assert client_for(node1.agent).post(url, {}, format="json").status_code == 403
    assert Job.objects.get(pk=job.pk).state == "placed" and Node.objects.get(pk=node1.pk).approved_at is not None

    response = client_for(staff).post(url, {"reason": "unknown machine"}, format="json")
    assert response.status_code == 200 and response.json()["approved"] is False
    job.refresh_from_db()
    assert (job.state, job.pending_reason) == ("pending", "Node node1 went down: unknown machine")
    assert not Allocation.objects.filter(job=job, end__isnull=True).exists()
    assert LogEntry.objects.get(object_id=str(node1.pk)).change_message == "Approval revoked: unknown machine."
    updated = job.updated_at

    assert client_for(staff).post(url, {}, format="json").status_code == 200
    assert Job.objects.get(pk=job.pk).updated_at == updated and LogEntry.objects.count() == 1
    assert client_for(node1.agent).get(f"/api/nodes/{node1.pk}/assignments/").json() == []


def test_revoke_and_approve_refuse_a_body_with_unknown_fields(node1, client_for, staff):
    response = client_for(staff).post(f"/api/nodes/{node1.pk}/revoke/", {"reasn": "typo"}, format="json")
    assert response.status_code == 400 and "reasn" in response.json()
    assert client_for(staff).post(f"/api/nodes/{node1.pk}/approve/", {"x": 1}, format="json").status_code == 400
    assert Node.objects.get(pk=node1.pk).approved_at is not None


def test_its_own_agent_keeps_the_approval_and_staff_registrations_are_approved(node1, register, staff, gpu_types):
    assert register(node1.agent, node_report()).status_code == 200
    assert Node.objects.get(pk=node1.pk).approved_at == node1.approved_at
    body = register(staff, node_report("racked-by-hand")).json()
    assert (body["approved"], body["approved_by"]) == (True, "operator")


def test_another_account_claiming_a_released_node_needs_approval_again(node1, make_user, alice, resnet50):
    """Rotating an agent's credentials: the operator clears the node's agent; the new account
    that registers it is a new holder, which the operator approves anew."""
    job = placed_job(alice, resnet50, list(node1.gpus.all()[:1]))
    Node.objects.filter(pk=node1.pk).update(agent=None)
    node, created = node_register(agent_user=make_user("agent-rotated", agent=True), **node_report())
    assert not created and node.approved_at is None and node.approved_by is None
    assert Job.objects.get(pk=job.pk).state == "pending"


def test_preapproved_host_names_are_approved_as_they_register(gpu_types, agent, settings):
    settings.GOGH_AUTO_APPROVE_NODES = ["GPU-*.lab.example", "spare"]
    approved, _ = node_register(agent_user=agent, **node_report("gpu-07.lab.example"))
    other, _ = node_register(agent_user=agent, **node_report("gpu-07.elsewhere.example", gpus=[]))
    assert approved.approved_at is not None and approved.approved_by is None
    assert other.approved_at is None


def test_admin_actions_approve_and_revoke_with_history(stranger, node1, alice, resnet50):
    client = Client()
    root = get_user_model().objects.create_superuser("root", "root@example.org", "pw")
    client.force_login(root)
    job = placed_job(alice, resnet50, list(node1.gpus.all()[:1]))
    pending = client.get("/admin/telemetry/node/?approval=pending")
    assert b"rogue" in pending.content and b"node1" not in pending.content

    client.post("/admin/telemetry/node/", {"action": "approve", "_selected_action": [stranger.pk]})
    client.post("/admin/telemetry/node/", {"action": "revoke", "_selected_action": [node1.pk]})
    assert Node.objects.get(pk=stranger.pk).approved_by == root
    assert Node.objects.get(pk=node1.pk).approved_at is None
    assert Job.objects.get(pk=job.pk).state == "pending"
    assert sorted(LogEntry.objects.filter(user=root).values_list("change_message", flat=True)) == [
        "Approval revoked.", "Approved: the node receives jobs.",
    ]
    assert b"Approved: the node receives jobs." in client.get(f"/admin/telemetry/node/{stranger.pk}/history/").content


def test_approve_node_command(stranger, gpu_types, agent):
    second, _ = node_register(agent_user=agent, **node_report("expected", gpus=[]))
    out = StringIO()
    call_command("approve_node", "--pending", stdout=out)
    assert "rogue" in out.getvalue() and "expected" in out.getvalue()

    with pytest.raises(CommandError, match="not registered: typo-host; nothing approved"):
        call_command("approve_node", "ROGUE", "typo-host", stdout=StringIO())
    assert Node.objects.filter(approved_at__isnull=False).count() == 0

    out = StringIO()
    call_command("approve_node", "ROGUE", "expected", stdout=out)
    assert "approved: expected, rogue" in out.getvalue()
    assert Node.objects.filter(approved_at__isnull=True).count() == 0
    call_command("approve_node", "--pending", stdout=(out := StringIO()))
    assert "no node is waiting for approval" in out.getvalue()

