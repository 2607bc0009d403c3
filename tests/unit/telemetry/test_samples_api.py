"""POST /api/telemetry/samples/: agents upload batches for their own nodes' GPUs, all or nothing."""
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from telemetry.models import GpuSample, Node
from telemetry.services import gpu_samples_ingest, node_register

from .reports import node_report

URL = "/api/telemetry/samples/"


def sample(uuid="GPU-node1-0", seconds_ago=0, **fields):
    ts = timezone.now() - timedelta(seconds=seconds_ago)
    return {"gpu": uuid, "ts": ts.isoformat(), "power_w": 210.5, "utilization": 0.93, "memory_used_mb": 9000,
            "sm_clock_mhz": 1380, "temperature_c": 64, "ecc_corrected": 0, "ecc_uncorrected": 0,
            "retired_pages": 0, **fields}


@pytest.fixture
def upload(client_for, agent, node1):
    def post(body, user=None):
        return client_for(user or agent).post(URL, body, format="json")

    return post


def test_a_batch_is_stored(upload):
    body = {
        "samples": [sample(seconds_ago=2), sample(seconds_ago=1), sample("GPU-node1-3", power_w=None)],
        "dropped": 4,
    }
    response = upload(body)
    assert response.status_code == 201, response.json()
    assert response.json() == {"accepted": 3}
    assert GpuSample.objects.count() == 3
    stored = GpuSample.objects.get(gpu__uuid="GPU-node1-3")
    assert stored.power_w is None and stored.utilization == 0.93 and stored.temperature_c == 64
    assert Node.objects.get(hostname="node1").samples_dropped == 4


def test_resending_a_batch_stores_nothing_twice(upload):
    body = {"samples": [sample(seconds_ago=1), sample("GPU-node1-1", seconds_ago=1)]}
    assert upload(body).json() == {"accepted": 2}
    response = upload(body)
    assert response.status_code == 201 and response.json() == {"accepted": 0}
    assert GpuSample.objects.count() == 2


def test_a_batch_with_bad_items_is_refused_whole_with_every_culprit_named(upload):
    body = {"samples": [
        sample(),
        sample("GPU-node1-1", utilization=1.5),
        sample("GPU-node1-2", power_w="lots"),
        sample("GPU-node1-3", ts="yesterday"),
        {"gpu": "GPU-node1-0"},
        sample(colour="red"),
    ]}
    response = upload(body)
    assert response.status_code == 400
    errors = response.json()
    assert set(errors) == {
        "samples[1].utilization", "samples[2].power_w", "samples[3].ts", "samples[4].ts", "samples[5].colour",
    }
    assert GpuSample.objects.count() == 0


def test_unknown_gpus_and_a_wrong_clock_are_400_and_nothing_is_stored(upload):
    response = upload({"samples": [sample(), sample("GPU-nowhere"), sample(seconds_ago=-3600)]})
    assert response.status_code == 400
    assert set(response.json()) == {"samples[1].gpu", "samples[2].ts"}
    assert "No GPU with UUID GPU-nowhere" in response.json()["samples[1].gpu"][0]
    assert GpuSample.objects.count() == 0


@pytest.mark.parametrize(
    "body, field",
    [
        ({"samples": []}, "samples"),
        ({}, "samples"),
        ({"samples": [sample()], "dropped": -1}, "dropped"),
        ({"samples": [sample()], "extra": 1}, "extra"),
        ({"samples": "GPU-node1-0"}, "samples"),
    ],
)
def test_malformed_batches_are_400(upload, body, field):
    response = upload(body)
    assert response.status_code == 400 and field in response.json()


def test_too_large_a_batch_is_400(upload):
    response = upload({"samples": [sample(seconds_ago=i) for i in range(1001)]})
    assert response.status_code == 400 and "samples" in response.json()


def test_another_nodes_gpus_are_403(upload, make_user, gpu_types):
    other = make_user("agent-node2", agent=True)
    node_register(agent_user=other, **node_report("node2"))
    response = upload({"samples": [sample("GPU-node2-0")]})
    assert response.status_code == 403
    response = upload({"samples": [sample(), sample("GPU-node2-1")]})  # mixed: refused whole
    assert response.status_code == 403
    assert GpuSample.objects.count() == 0


def test_only_agents_and_staff_upload(upload, alice, staff):
    assert upload({"samples": [sample()]}, user=alice).status_code == 403
    assert upload({"samples": [sample()]}, user=staff).status_code == 201


def test_anonymous_is_401(client_for, node1):
    assert client_for(None).post(URL, {"samples": [sample()]}, format="json").status_code == 401


@pytest.mark.parametrize(
    "fields, path",
    [
        ({"ecc_corrected": 2**63}, "samples[0].ecc_corrected"),  # bigint column: the database's overflow was a 500
        ({"ecc_uncorrected": 2**63}, "samples[0].ecc_uncorrected"),
        ({"retired_pages": 2**31}, "samples[0].retired_pages"),  # a 32-bit column (PostgreSQL's overflow)
        ({"power_w": "NaN"}, "samples[0].power_w"),  # NaN passes every min/max check
        ({"utilization": "NaN"}, "samples[0].utilization"),
        ({"temperature_c": "-Infinity"}, "samples[0].temperature_c"),
        ({"ts": "2026-11-30T16:01:02"}, "samples[0].ts"),  # no zone: not read as UTC silently
        ({"ts": "0001-01-01T00:00:00+00:00"}, "samples[0].ts"),  # a clock that was never set
        ({"ts": (timezone.now() - timedelta(days=8)).isoformat()}, "samples[0].ts"),
    ],
)
def test_out_of_range_numbers_and_timestamps_are_400(upload, fields, path):
    response = upload({"samples": [sample(**fields)]})
    assert response.status_code == 400, response.content
    assert set(response.json()) == {path}
    assert GpuSample.objects.count() == 0


def test_an_old_timestamp_is_named_like_a_future_one(upload):
    response = upload({"samples": [sample(), sample(seconds_ago=8 * 86400)]})
    assert response.json() == {"samples[1].ts": ["More than 7 days in the past; is the node's clock set?"]}


def test_a_dropped_count_beyond_its_column_is_400(upload):
    response = upload({"samples": [sample()], "dropped": 2**63})
    assert response.status_code == 400 and set(response.json()) == {"dropped"}
    assert Node.objects.get(hostname="node1").samples_dropped == 0


def test_the_largest_values_the_columns_hold_are_stored(upload):
    """The limits follow the columns: the largest value each holds is accepted, as is a day-old
    backlog (the agent's default buffer after an outage)."""
    body = {"samples": [sample(seconds_ago=86400, ecc_corrected=2**63 - 1, ecc_uncorrected=2**63 - 1,
                               retired_pages=2**31 - 1)], "dropped": 2**63 - 1}
    assert upload(body).json() == {"accepted": 1}
    stored = GpuSample.objects.get()
    assert (stored.ecc_corrected, stored.ecc_uncorrected, stored.retired_pages) == (2**63 - 1, 2**63 - 1, 2**31 - 1)
    assert Node.objects.get(hostname="node1").samples_dropped == 2**63 - 1


def test_accepted_counts_the_samples_stored_not_the_samples_sent(upload):
    first, second = sample(seconds_ago=2), sample(seconds_ago=1)
    assert upload({"samples": [first, first, first]}).json() == {"accepted": 1}  # one (GPU, instant): one row
    assert upload({"samples": [first]}).json() == {"accepted": 0}  # a resend stores nothing
    assert upload({"samples": [first, second, second]}).json() == {"accepted": 1}
    assert GpuSample.objects.count() == 2


def test_the_first_of_duplicates_in_a_batch_is_the_one_stored(upload):
    twice = sample(seconds_ago=1)
    assert upload({"samples": [twice, {**twice, "power_w": 99.0}]}).json() == {"accepted": 1}
    assert GpuSample.objects.get().power_w == 210.5


def test_counting_what_is_stored_costs_the_same_queries_for_any_batch_size(node1, agent):
    """Duplicates are found with one query for the whole batch, not one per sample."""
    def queries(count):
        samples = [{**sample(), "ts": timezone.now() - timedelta(seconds=count + i)} for i in range(count)]
        with CaptureQueriesContext(connection) as captured:
            assert gpu_samples_ingest(agent_user=agent, samples=samples) == count
        return len(captured)

    queries(1)  # the GPU's first batch also records its health (Gpu.health); steady readings write nothing
    assert queries(2) == queries(80)  # 80: one INSERT on SQLite, which splits larger ones


def test_a_full_batch_is_stored(upload):
    samples = [sample(f"GPU-node1-{i % 4}", seconds_ago=i // 4) for i in range(1000)]
    assert upload({"samples": samples}).json() == {"accepted": 1000}
    assert upload({"samples": samples}).json() == {"accepted": 0}
