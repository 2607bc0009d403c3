"""POST /api/solve/: staff only, strict body, dry run applies nothing."""
import pytest
from django.utils import timezone

from catalog.models import Measurement
from scheduler import services
from scheduler.models import Allocation, SolveRun


@pytest.fixture
def pending_job(cluster, alice, resnet50, v100):
    Measurement.objects.create(
        workload=resnet50, gpu_type=v100, throughput=10.0, source="reference", observed_at=timezone.now()
    )
    return services.job_submit(owner=alice, workload=resnet50, min_throughput=8, max_gpus=1).job


def test_only_staff_may_solve(client_for, alice, pending_job):
    assert client_for(None).post("/api/solve/", {}, format="json").status_code == 401
    assert client_for(alice).post("/api/solve/", {}, format="json").status_code == 403
    assert not SolveRun.objects.exists()


def test_dry_run_returns_the_decision_without_applying_it(client_for, staff, pending_job):
    response = client_for(staff).post("/api/solve/", {"dry_run": True}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["dry_run"] is True and body["solver"] == "ilp" and body["status"] == "optimal"
    [placement] = body["placements"]
    assert placement["job"] == pending_job.pk and placement["gpu_type"] == "v100" and len(placement["gpus"]) == 1
    assert placement["partners"] == []  # alone
    assert body["pending"] == {}
    pending_job.refresh_from_db()
    assert pending_job.state == "pending" and not Allocation.objects.exists()


def test_a_real_round_applies_and_can_pick_a_solver(client_for, staff, pending_job):
    response = client_for(staff).post("/api/solve/", {"solver": "greedy"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["solver"] == "greedy"
    pending_job.refresh_from_db()
    assert pending_job.state == "placed"
    assert SolveRun.objects.get().trigger == "manual"


@pytest.mark.parametrize(
    "body,field", [({"dryrun": True}, "dryrun"), ({"solver": "quantum"}, "solver"), ({"dry_run": "maybe"}, "dry_run")]
)
def test_bad_bodies_get_400_naming_the_field(client_for, staff, pending_job, body, field):
    response = client_for(staff).post("/api/solve/", body, format="json")
    assert response.status_code == 400 and field in response.json()
    assert not SolveRun.objects.exists()
