"""A job's environment holds its tenant's secrets (a database URL, AWS_SECRET_ACCESS_KEY): only
the agent of the node running it reads the values. Not the admin, the console's pages, their
live snapshot and events, nor staff reading that node's assignments."""
import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils import timezone

from gogh_web.events.models import Event
from scheduler.models import Allocation
from scheduler.services import job_transition
from telemetry.models import Node

SECRET = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"


@pytest.fixture
def secret_job(submit, alice, cluster, make_user, django_capture_on_commit_callbacks):
    """A job of alice's with a secret in its environment, placed on gpu-a, whose agent is set."""
    Node.objects.filter(hostname="gpu-a").update(agent=make_user("agent-gpu-a", agent=True))
    with django_capture_on_commit_callbacks(execute=True):  # its live events are stored
        job = submit(alice, environment={"AWS_SECRET_ACCESS_KEY": SECRET, "EPOCHS": "3"})
        job = job_transition(job=job, to="placed")
        Allocation.objects.create(job=job, gpu=cluster[0], start=timezone.now())
    return job


def test_the_admin_shows_the_keys_not_the_values(secret_job, browser_for):
    root = get_user_model().objects.create_superuser("root", "root@example.org", "pw")
    page = browser_for(root).get(f"/admin/scheduler/job/{secret_job.pk}/change/")
    assert page.status_code == 200
    body = page.content.decode()
    assert "AWS_SECRET_ACCESS_KEY=(hidden)" in body and "EPOCHS=(hidden)" in body
    assert SECRET not in body


@pytest.mark.parametrize("page", ["dashboard:cluster", "dashboard:jobs"])
def test_console_pages_and_live_events_carry_no_environment(secret_job, browser_for, alice, staff, page):
    for viewer in (alice, staff):
        assert SECRET not in browser_for(viewer).get(reverse(page)).content.decode()
    assert Event.objects.filter(kind="job").exists()
    assert not any(SECRET in str(event.data) for event in Event.objects.all())


def test_only_the_nodes_agent_reads_the_values_in_its_assignments(secret_job, client_for, staff):
    node = Node.objects.get(hostname="gpu-a")
    url = f"/api/nodes/{node.pk}/assignments/"
    (mine,) = client_for(node.agent).get(url).json()
    assert mine["environment"] == {"AWS_SECRET_ACCESS_KEY": SECRET, "EPOCHS": "3"}
    (seen,) = client_for(staff).get(url).json()
    assert seen["environment"] == {"AWS_SECRET_ACCESS_KEY": None, "EPOCHS": None}
