"""Creating a service: its replicas are jobs submitted as any other, with the derived T_min;
each refusal names its field and writes nothing."""
import pytest
from django.core.exceptions import ValidationError

from scheduler.lifecycle import JobState
from scheduler.models import Job, Service
from scheduler.serving import latency
from scheduler.serving.services import service_create
from scheduler.serving.validation import MAX_REPLICAS

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("without_rate_headroom")]


def _refused(owner, data) -> dict:
    with pytest.raises(ValidationError) as caught:
        service_create(owner=owner, data=data)
    assert not Service.objects.exists() and not Job.objects.exists()
    return caught.value.message_dict


def test_a_service_starts_with_its_minimum_replicas_pending_at_the_derived_tmin(alice, measured, ranker_data):
    service = service_create(owner=alice, data={**ranker_data, "min_replicas": 2, "command": "serve.py",
                                                "environment": {"PORT": "8080"}, "priority": 3})
    replicas = list(service.replicas.order_by("pk"))
    need = latency.required_steps_per_s(50.0, 500.0, 64, margin=0.2)  # 100 requests/s over 2 replicas
    assert [job.name for job in replicas] == ["ranker replica 1", "ranker replica 2"]
    for job in replicas:
        assert job.state == JobState.PENDING.value and job.pending_reason
        assert (job.max_gpus, job.total_steps, job.priority, job.command) == (1, None, 3, "serve.py")
        assert job.environment == {"PORT": "8080"} and job.tenant == service.tenant and job.owner == alice
        assert job.min_throughput == pytest.approx(need)
    assert service.replica_min_throughput == pytest.approx(need)
    assert service.replicas_target == 2 and service.forecast_rps == 100.0 and service.slo_note == ""


def test_the_batch_size_defaults_to_the_workloads(alice, measured, ranker_data):
    data = {key: value for key, value in ranker_data.items() if key != "batch_size"}
    assert service_create(owner=alice, data=data).batch_size == 64


def test_min_replicas_above_max_is_refused_on_both_fields(alice, measured, ranker_data):
    problems = _refused(alice, {**ranker_data, "min_replicas": 3, "max_replicas": 2})
    assert "above max_replicas" in problems["min_replicas"][0] and "below min_replicas" in problems["max_replicas"][0]


def test_more_replicas_than_allowed_is_refused(alice, measured, ranker_data):
    assert str(MAX_REPLICAS) in _refused(alice, {**ranker_data, "max_replicas": MAX_REPLICAS + 1})["max_replicas"][0]


@pytest.mark.parametrize("bound", [0.0, -5.0, float("inf")])
def test_a_bound_that_is_no_positive_number_is_refused(alice, measured, ranker_data, bound):
    assert "latency_bound_ms" in _refused(alice, {**ranker_data, "latency_bound_ms": bound})


def test_a_bound_no_gpu_can_meet_names_the_fastest_type_and_what_it_allows(alice, measured, ranker_data):
    # A V100 at 10 steps/s answers a batch of 64 in 107 ms without load; with the margin 0.2, 129 ms.
    message = _refused(alice, {**ranker_data, "latency_bound_ms": 120.0})["latency_bound_ms"][0]
    assert "v100" in message and "129 ms" in message


def test_a_bound_just_above_the_fastest_types_floor_is_accepted(alice, measured, ranker_data):
    assert service_create(owner=alice, data={**ranker_data, "latency_bound_ms": 130.0}).pk


def test_with_no_speed_known_on_any_type_the_service_is_accepted_and_says_so(alice, cluster, ranker_data):
    service = service_create(owner=alice, data={**ranker_data, "latency_bound_ms": 1.0})
    assert "no GPU type has a predicted speed" in service.slo_note and service.replicas.count() == 1


def test_a_user_of_no_tenant_is_refused(make_user, measured, ranker_data):
    assert "tenant" in _refused(make_user("nomad"), ranker_data)
