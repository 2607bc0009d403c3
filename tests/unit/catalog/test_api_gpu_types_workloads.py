"""/api/gpu-types/ and /api/workloads/: everyone signed in reads, staff change, input is strict."""
from datetime import UTC, datetime

import pytest

from catalog.models import GpuType, Measurement, Workload

H100 = {"name": "h100", "memory_gb": 80, "tdp_w": 700, "idle_w": 70, "power_curve": [[0, 70], [1, 700]]}


def test_anonymous_gets_401(client_for, db):
    assert client_for(None).get("/api/gpu-types/").status_code == 401
    assert client_for(None).get("/api/workloads/").status_code == 401


def test_users_read_gpu_types_by_name_but_cannot_write(client_for, alice, v100, k80):
    client = client_for(alice)
    assert [t["name"] for t in client.get("/api/gpu-types/").json()["results"]] == ["k80", "v100"]
    assert client.get("/api/gpu-types/v100/").json()["tdp_w"] == 300
    assert client.post("/api/gpu-types/", H100, format="json").status_code == 403
    assert client.patch("/api/gpu-types/v100/", {"tdp_w": 250}, format="json").status_code == 403
    assert client.delete("/api/gpu-types/v100/").status_code == 403
    assert GpuType.objects.get(name="v100").tdp_w == 300


def test_staff_create_change_and_delete_gpu_types(client_for, staff):
    client = client_for(staff)
    created = client.post("/api/gpu-types/", H100, format="json")
    assert created.status_code == 201, created.json()
    assert client.patch("/api/gpu-types/h100/", {"idle_w": 60}, format="json").json()["idle_w"] == 60
    too_high = client.patch("/api/gpu-types/h100/", {"idle_w": 701}, format="json")
    assert too_high.json() == {"idle_w": ["Idle power must lie between 0 W and the TDP."]}
    assert client.delete("/api/gpu-types/h100/").status_code == 204
    assert not GpuType.objects.exists()


@pytest.mark.parametrize(
    "changes, errors",
    [
        ({"idle_w": 800}, {"idle_w": ["Idle power must lie between 0 W and the TDP."]}),
        ({"memory_gb": 0}, {"memory_gb": ["Must be greater than 0."]}),
        (
            {"power_curve": [[0.5, 70], [0.2, 700]]},
            {"power_curve": ["Power-curve utilizations must be strictly increasing."]},
        ),
        ({"tdp_w": "Infinity"}, {"tdp_w": ["A finite number is required."]}),
        (
            {"product_names": ["H100", ""]},
            {"product_names": ["Give a list of non-empty NVML product-name substrings."]},
        ),
        ({"watts": 3}, {"watts": ["Unknown field."]}),
        ({"name": "H100x"}, {"name": ["Use lower-case letters, digits, '-' and '_' (e.g. v100)."]}),
        ({"tdp_w": 1e308}, {"tdp_w": ["Ensure this value is less than or equal to 2000.0."]}),
        ({"memory_gb": 1e300}, {"memory_gb": ["Ensure this value is less than or equal to 4096.0."]}),
        (
            {"power_curve": [[0, 70], [1, 1e308]]},
            {"power_curve": ["Point [1, 1e+308]: utilization must lie in [0, 1] and watts in [0, 2000]."]},
        ),
    ],
    ids=["idle above tdp", "no memory", "power curve", "infinite", "product names", "unknown field",
         "capitals (agents report lower case)", "tdp beyond any GPU", "memory beyond any GPU", "curve beyond any GPU"],
)
def test_gpu_type_validation(client_for, staff, changes, errors):
    response = client_for(staff).post("/api/gpu-types/", {**H100, **changes}, format="json")
    assert response.status_code == 400
    assert response.json() == errors
    assert not GpuType.objects.exists()


def test_a_gpu_type_with_measurements_is_not_deleted(client_for, staff, v100, resnet50):
    Measurement.objects.create(
        workload=resnet50, gpu_type=v100, throughput=1, source="profiling", observed_at=datetime(2024, 1, 1, tzinfo=UTC)
    )
    response = client_for(staff).delete("/api/gpu-types/v100/")
    assert response.status_code == 400
    assert response.json() == {
        "non_field_errors": ["GPU type v100 is still used by measurements; delete or move those first."]
    }
    assert GpuType.objects.filter(name="v100").exists()


def test_workloads_filter_by_name_family_and_kind(client_for, alice, resnet50, lm):
    Workload.objects.create(name="BERT (batch size 8)", family="BERT", batch_size=8, kind="inference")
    client = client_for(alice)

    def names(query):
        response = client.get(f"/api/workloads/?{query}")
        assert response.status_code == 200
        return sorted(w["name"] for w in response.json()["results"])

    assert names("family=LM") == ["LM (batch size 20)"]
    assert names("name=ResNet-50 (batch size 64)") == ["ResNet-50 (batch size 64)"]
    assert names("kind=inference") == ["BERT (batch size 8)"]
    assert names("kind=training") == ["LM (batch size 20)", "ResNet-50 (batch size 64)"]
    assert client.get(f"/api/workloads/{lm.pk}/").json()["family"] == "LM"


def test_workload_writes(client_for, alice, staff, lm):
    body = {"name": "BERT (batch size 8)", "family": "BERT", "batch_size": 8, "compute_density": 0.7}
    assert client_for(alice).post("/api/workloads/", body, format="json").status_code == 403
    client = client_for(staff)
    created = client.post("/api/workloads/", body, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["kind"] == "training"
    bad = client.post("/api/workloads/", {**body, "name": "x", "memory_intensity": 2, "flavour": 1}, format="json")
    assert bad.status_code == 400
    assert bad.json() == {"flavour": ["Unknown field."]}
    bad = client.post("/api/workloads/", {**body, "name": "x", "memory_intensity": 2}, format="json")
    assert bad.json() == {"memory_intensity": ["Ensure this value is less than or equal to 1."]}
    assert client.delete(f"/api/workloads/{lm.pk}/").status_code == 204
    assert list(Workload.objects.values_list("name", flat=True)) == ["BERT (batch size 8)"]
