"""Access to the dashboard pages: sign-in required; users see their tenant, staff see all."""
import pytest
from django.contrib.staticfiles import finders
from django.urls import reverse

from scheduler.models import SolverConfigChange
from scheduler.services import solver_config_update

PAGES = ["dashboard:cluster", "dashboard:jobs", "dashboard:predictions", "dashboard:solver", "dashboard:tradeoff",
         "dashboard:tenants", "dashboard:services"]


@pytest.mark.parametrize("page", PAGES)
def test_anonymous_is_sent_to_sign_in(client, db, page):
    response = client.get(reverse(page))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login") + "?next=")


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_for_a_user_with_nav_and_csrf(browser_for, alice, cluster, page):
    response = browser_for(alice).get(reverse(page))
    assert response.status_code == 200
    body = response.content.decode()
    assert 'aria-current="page"' in body and "csrfmiddlewaretoken" in body
    assert "cdn." not in body and "https://" not in body


def test_sign_in_page_logs_in_and_lands_on_the_console(client, alice):
    page = client.get(reverse("login"))
    assert page.status_code == 200 and b"csrfmiddlewaretoken" in page.content
    wrong = client.post(reverse("login"), {"username": "alice", "password": "nope"})
    assert wrong.status_code == 200 and b"did not match" in wrong.content
    response = client.post(reverse("login"), {"username": "alice", "password": "pw-alice"})
    assert response.status_code == 302 and response["Location"] == reverse("dashboard:cluster")


def test_a_signed_in_user_sent_back_to_sign_in_lands_on_the_console(browser_for, alice):
    """?next= pointing at the sign-in page itself was a redirect loop, which Django answers with a 500."""
    response = browser_for(alice).get(reverse("login") + "?next=" + reverse("login"))
    assert response.status_code == 302 and response["Location"] == reverse("dashboard:cluster")


def test_jobs_page_shows_own_tenant_only_and_staff_everything(browser_for, alice, bob, staff, cluster, submit):
    mine, theirs = submit(alice), submit(bob)
    alice_page = browser_for(alice).get(reverse("dashboard:jobs"))
    rows = {job["id"] for job in alice_page.context["jobs"]}
    assert rows == {mine.pk}
    assert f'data-job="{theirs.pk}"' not in alice_page.content.decode()
    assert {job["id"] for job in browser_for(staff).get(reverse("dashboard:jobs")).context["jobs"]} == {
        mine.pk,
        theirs.pk,
    }


def test_jobs_page_row_has_reason_placement_and_slo(browser_for, alice, cluster, submit):
    job = submit(alice)
    (row,) = browser_for(alice).get(reverse("dashboard:jobs")).context["jobs"]
    assert row["id"] == job.pk and row["state"] == "pending" and row["pending_reason"]
    assert row["placement"] is None and row["slo"] == "unknown" and row["tenant"] == "research"


def test_a_job_sharing_its_gpu_with_two_jobs_names_both(browser_for, alice, cluster, submit):
    """theta > 2: the row says "with jobs 4, 7" (one job: "with job 4")."""
    from django.utils import timezone

    from scheduler.models import Allocation
    from scheduler.services import job_transition

    job, first, second = (job_transition(job=submit(alice, max_gpus=1), to="placed") for _ in range(3))
    for member in (job, first, second):
        allocation = Allocation.objects.create(job=member, gpu=cluster[0], start=timezone.now())
        allocation.partners.set({job, first, second} - {member})
    page = browser_for(alice).get(reverse("dashboard:jobs"))
    row = next(row for row in page.context["jobs"] if row["id"] == job.pk)
    assert row["placement"]["partner_job_ids"] == [first.pk, second.pk]
    assert f"1 x v100, with jobs {first.pk}, {second.pk} " in page.content.decode()


def test_a_user_without_tenant_gets_no_submit_form(browser_for, make_user, cluster):
    loner = make_user("loner")
    response = browser_for(loner).get(reverse("dashboard:jobs"))
    assert response.status_code == 200 and b'id="submit-form"' not in response.content


def test_apply_button_only_for_staff(browser_for, alice, staff, cluster):
    assert b'id="apply"' not in browser_for(alice).get(reverse("dashboard:tradeoff")).content
    assert b'id="apply"' in browser_for(staff).get(reverse("dashboard:tradeoff")).content


def test_solver_page_lists_settings_and_their_audit(browser_for, alice, staff, cluster):
    solver_config_update(by=staff, values={"base_energy_weight": 2.5})
    response = browser_for(alice).get(reverse("dashboard:solver"))
    assert response.status_code == 200
    assert [c.field for c in response.context["changes"]] == ["base_energy_weight"]
    assert SolverConfigChange.objects.count() == 1 and b"2.5" in response.content


def test_cluster_page_counts_gpus_by_type_and_state(browser_for, alice, cluster):
    response = browser_for(alice).get(reverse("dashboard:cluster"))
    assert response.context["gpus_by_type"] == {"v100": {"healthy": 2}}
    assert response.context["nodes_down"] == 0


def test_plotly_bundle_is_found_from_the_installed_package():
    path = finders.find("plotly/plotly.min.js")
    assert path and path.endswith("package_data/plotly.min.js")
    assert finders.find("plotly/widgetbundle.js") is None


def test_cluster_page_hands_its_script_the_staleness_setting(browser_for, alice, cluster, settings):
    settings.GOGH_TELEMETRY_METRICS_STALE_S = 45.0
    response = browser_for(alice).get(reverse("dashboard:cluster"))
    data = response.context["page_data"]
    assert data["stale_s"] == 45.0 and [g["id"] for g in data["gpus"]] == [g.pk for g in cluster]
    assert b'id="cluster-data"' in response.content


def test_solver_page_renders_the_live_window_of_rounds(browser_for, alice, db, settings):
    from scheduler.models import SolveRun

    settings.GOGH_LIVE_SOLVE_RUNS_KEPT = 2
    runs = [SolveRun.objects.create(trigger="periodic", solver="ilp", status="optimal") for _ in range(3)]
    response = browser_for(alice).get(reverse("dashboard:solver"))
    assert [r["id"] for r in response.context["runs"]] == [runs[2].pk, runs[1].pk]
    assert f'data-run="{runs[0].pk}"'.encode() not in response.content
