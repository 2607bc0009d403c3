"""/api/measurements/: everyone signed in reads and filters; agents (of what runs on their
nodes) and staff report, all or none."""
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from catalog.api.serializers import MAX_BATCH
from catalog.models import Measurement
from gogh_web.api.fields import AwareDateTimeField
from scheduler.models import Allocation
from scheduler.services import job_submit, job_transition
from telemetry.models import Gpu, Node

URL = "/api/measurements/"


@pytest.fixture
def report(v100, k80, resnet50, lm):
    """report(**changes) -> a valid measurement body."""

    def make(**changes):
        return {"workload": resnet50.name, "gpu_type": "v100", "throughput": 12.5, "source": "telemetry", **changes}

    return make


@pytest.fixture
def running(agent, alice, v100, k80, resnet50, lm):
    """On the agent's approved node: ResNet-50 sharing a V100 with LM, ResNet-50 alone on a K80."""
    node = Node.objects.create(hostname="node1", agent=agent, approved_at=timezone.now())
    on_v100, on_k80 = (Gpu.objects.create(node=node, index=i, uuid=f"GPU-{i}", gpu_type=gpu_type)
                       for i, gpu_type in enumerate((v100, k80)))

    def place(workload, gpu):
        job = job_submit(owner=alice, workload=workload, min_throughput=1, max_gpus=1).job
        return Allocation.objects.create(job=job_transition(job=job, to="placed"), gpu=gpu, start=timezone.now())

    first, second = place(resnet50, on_v100), place(lm, on_v100)
    first.partners.set([second.job])
    second.partners.set([first.job])
    place(resnet50, on_k80)
    return node


@pytest.fixture
def stored(v100, k80, resnet50, lm):
    """Four measurements: alone and with a partner, on two types, from two sources and times."""

    def add(workload, gpu_type, partner=None, num_gpus=1, source="telemetry", day=1):
        return Measurement.objects.create(
            workload=workload, gpu_type=gpu_type, partner=partner, num_gpus=num_gpus, throughput=1.0,
            source=source, observed_at=datetime(2024, 5, day, tzinfo=UTC),
        )

    return [
        add(resnet50, v100, day=1),
        add(resnet50, v100, partner=lm, day=2),
        add(lm, k80, num_gpus=2, source="profiling", day=3),
        add(lm, v100, partner=resnet50, source="reference", day=4),
    ]


def test_anonymous_gets_401(client_for, report):
    assert client_for(None).get(URL).status_code == 401
    assert client_for(None).post(URL, report(), format="json").status_code == 401


def test_users_read_but_cannot_write(client_for, alice, stored, report):
    client = client_for(alice)
    body = client.get(URL).json()
    assert body["count"] == 4
    first = client.get(f"{URL}{stored[1].pk}/").json()
    assert (first["workload"], first["gpu_type"], first["partner"]) == (
        "ResNet-50 (batch size 64)", "v100", "LM (batch size 20)"
    )
    assert client.post(URL, report(), format="json").status_code == 403
    assert Measurement.objects.count() == 4


def test_no_edits_through_the_api(client_for, staff, stored):
    client = client_for(staff)
    assert client.patch(f"{URL}{stored[0].pk}/", {"throughput": 2}, format="json").status_code == 405
    assert client.delete(f"{URL}{stored[0].pk}/").status_code == 405


def test_agent_reports_one(client_for, agent, report, running):
    response = client_for(agent).post(
        URL, report(partner="LM (batch size 20)", partner_throughput=3, power_w=240.5, utilization=0.8), format="json"
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["workload"], body["partner"], body["throughput"], body["source"]) == (
        "ResNet-50 (batch size 64)", "LM (batch size 20)", 12.5, "telemetry"
    )
    stored = Measurement.objects.get()
    assert (stored.partner.name, stored.partner_throughput, stored.power_w, stored.num_gpus, stored.consolidated) == (
        "LM (batch size 20)", 3, 240.5, 1, True
    )
    assert stored.observed_at is not None


def test_agent_reports_a_batch(client_for, agent, report, running):
    items = [report(), report(gpu_type="k80", throughput=0, observed_at="2024-05-01T12:00:00+02:00")] * 3
    response = client_for(agent).post(URL, items, format="json")
    assert response.status_code == 201, response.json()
    assert len(response.json()) == 6
    assert Measurement.objects.filter(gpu_type__name="k80", throughput=0).count() == 3
    assert Measurement.objects.filter(observed_at=datetime(2024, 5, 1, 10, tzinfo=UTC)).count() == 3


def test_a_bad_item_fails_the_whole_batch_and_is_named_by_index(client_for, agent, report):
    items = [report(), report(throughput=-1), report(), report(workload="BERT", gpu_type="a40")]
    response = client_for(agent).post(URL, items, format="json")
    assert response.status_code == 400
    assert response.json() == {
        "1": {"throughput": ["Ensure this value is greater than or equal to 0."]},
        "3": {"workload": ["Unknown workload 'BERT'."], "gpu_type": ["Unknown GPU type 'a40'."]},
    }
    assert Measurement.objects.count() == 0


def test_batch_limits(client_for, agent, report):
    client = client_for(agent)
    assert client.post(URL, [], format="json").status_code == 400
    too_many = client.post(URL, [report()] * (MAX_BATCH + 1), format="json")
    assert too_many.status_code == 400
    assert "non_field_errors" in too_many.json()
    assert Measurement.objects.count() == 0


@pytest.mark.parametrize(
    "changes, field, message",
    [
        ({"througput": 3}, "througput", "Unknown field."),
        ({"observed_at": "2024-05-01T12:00:00"}, "observed_at", AwareDateTimeField.default_error_messages["naive"]),
        ({"throughput": "NaN"}, "throughput", "A finite number is required."),
        ({"utilization": 1.5}, "utilization", "Ensure this value is less than or equal to 1."),
        ({"num_gpus": 0}, "num_gpus", "Ensure this value is greater than or equal to 1."),
        ({"partner_throughput": 1}, "partner_throughput", "Only a measurement with a partner has one."),
        ({"source": "reference"}, "source", "Only staff may write reference measurements."),
        ({"partner": "BERT"}, "partner", "Unknown partner workload 'BERT'."),
    ],
    ids=["unknown field", "naive time", "NaN", "utilization", "num_gpus", "partner_throughput", "reference", "partner"],
)
def test_invalid_reports(client_for, agent, report, changes, field, message):
    response = client_for(agent).post(URL, report(**changes), format="json")
    assert response.status_code == 400
    assert response.json() == {field: [message]}
    assert Measurement.objects.count() == 0


@pytest.mark.parametrize(
    "changes, field, words",
    [
        ({"throughput": 1e308}, "throughput", "more than any job runs"),
        ({"partner": "LM (batch size 20)", "partner_throughput": 2e6}, "partner_throughput", "more than any job runs"),
        ({"power_w": 1e308}, "power_w", "above 2000 W per GPU (1 GPU)"),
        ({"power_w": 4500, "num_gpus": 2}, "power_w", "above 2000 W per GPU (2 GPUs)"),
        ({"memory_gb": 1e300}, "memory_gb", "more than the GPU type has (16 GB)"),
        ({"observed_at": "9999-12-31T23:59:59Z"}, "observed_at", "in the future; is the clock set?"),
        ({"observed_at": "0001-01-01T00:00:00Z"}, "observed_at", "is before 2000"),
        ({"num_gpus": 70000}, "num_gpus", "less than or equal to 32767"),
    ],
    ids=["throughput", "partner throughput", "power", "power of 2 GPUs", "memory", "future", "past", "num_gpus"],
)
def test_values_beyond_any_real_measurement_are_refused(client_for, agent, report, changes, field, words):
    """A 1e308 steps/s made every round's objective infinite; 1e300 GB kept a workload pending for good."""
    batch = [report(), report(**changes)]
    response = client_for(agent).post(URL, batch, format="json")
    assert response.status_code == 400
    (message,) = response.json()["1"][field]
    assert words in message
    assert Measurement.objects.count() == 0


def test_values_at_the_limits_are_stored(client_for, agent, report, running):
    """A full 16 GB GPU may report 17.2 (GiB read as GB); 8 GPUs at 700 W; a minute of clock skew."""
    ahead = (datetime.now(UTC) + timedelta(minutes=1)).isoformat()
    response = client_for(agent).post(
        URL, [report(memory_gb=17.2), report(num_gpus=8, power_w=5600), report(observed_at=ahead)], format="json"
    )
    assert response.status_code == 201, response.json()
    assert Measurement.objects.count() == 3


@pytest.mark.parametrize(
    "changes, words",
    [
        ({"workload": "LM (batch size 20)", "gpu_type": "k80"}, "no job of 'LM (batch size 20)' runs on a k80 GPU"),
        ({"gpu_type": "k80", "partner": "LM (batch size 20)"}, "no job of 'LM (batch size 20)' shares a k80 GPU"),
        ({"source": "profiling"}, "an agent reports source telemetry only"),
    ],
    ids=["nothing of it runs there", "not its partner there", "not telemetry"],
)
def test_an_agent_writes_only_measurements_of_what_runs_on_its_nodes(client_for, agent, report, running,
                                                                     changes, words):
    """3 POSTs by any agent token moved A3C's planning throughput on K80 from 3.44 to 600,000 steps/s."""
    response = client_for(agent).post(URL, [report(), report(throughput=600000, **changes)], format="json")
    assert response.status_code == 403
    assert f"measurement 1: {words}" in response.json()["detail"]
    assert Measurement.objects.count() == 0


def test_another_agents_or_an_unapproved_nodes_jobs_do_not_count(client_for, make_user, agent, report, running):
    assert client_for(make_user("agent-node2", agent=True)).post(URL, report(), format="json").status_code == 403
    Node.objects.filter(pk=running.pk).update(approved_at=None)
    assert client_for(agent).post(URL, report(), format="json").status_code == 403
    assert Measurement.objects.count() == 0


def test_staff_may_write_reference_rows(client_for, staff, report):
    response = client_for(staff).post(URL, report(source="reference", reference="vendor sheet"), format="json")
    assert response.status_code == 201, response.json()
    assert Measurement.objects.get().source == "reference"


@pytest.mark.parametrize(
    "query, expected",
    [
        ("workload=ResNet-50 (batch size 64)", [0, 1]),
        ("gpu_type=k80", [2]),
        ("partner=none", [0, 2]),
        ("partner=ResNet-50 (batch size 64)", [3]),
        ("source=profiling", [2]),
        ("num_gpus=2", [2]),
        ("observed_after=2024-05-02T00:00:00Z", [1, 2, 3]),
        ("observed_before=2024-05-02T00:00:00Z", [0]),
        ("observed_after=2024-05-02T00:00:00Z&observed_before=2024-05-04T00:00:00Z&gpu_type=v100", [1]),
        ("ordering=observed_at", [0, 1, 2, 3]),
    ],
)
def test_filters(client_for, alice, stored, query, expected):
    response = client_for(alice).get(f"{URL}?{query}")
    assert response.status_code == 200
    ids = [item["id"] for item in response.json()["results"]]
    wanted = [stored[i].pk for i in expected]
    assert ids == wanted if "ordering" in query else sorted(ids) == sorted(wanted)


@pytest.mark.parametrize(
    "query, field, words",
    [
        ("source=guess", "source", "Select a valid choice"),
        ("observed_after=yesterday", "observed_after", "Enter a valid date/time"),
        ("observed_after=2024-05-02T00:00:00", "observed_after", "Give a timezone"),
        ("observed_after=0001-01-01T00:00:00%2B05:00", "observed_after", "Out of range"),
        ("observed_before=9999-12-31T23:59:59-05:00", "observed_before", "Out of range"),
        ("num_gpus=1.5", "num_gpus", "Enter a whole number"),
        ("consolidated=maybe", "consolidated", "Select a valid choice"),
    ],
    ids=[
        "source", "not a time", "no timezone", "before year 1 in UTC", "after 9999 in UTC", "not whole", "not boolean"
    ],
)
def test_a_bad_filter_value_is_a_400(client_for, alice, stored, query, field, words):
    """Not a 500 (the UTC conversion overflowed) nor a silently different query (1.5 read as 1,
    "maybe" as no filter, a time without zone as server time)."""
    response = client_for(alice).get(f"{URL}?{query}")
    assert response.status_code == 400
    assert words in " ".join(response.json()[field])


def test_consolidated_filter(client_for, alice, stored):
    spread = Measurement.objects.create(
        workload=stored[0].workload, gpu_type=stored[0].gpu_type, num_gpus=2, consolidated=False, throughput=1.0,
        source="telemetry", observed_at=datetime(2024, 5, 5, tzinfo=UTC),
    )
    for value, expected in (("false", [spread.pk]), ("0", [spread.pk]), ("true", [m.pk for m in stored])):
        ids = [item["id"] for item in client_for(alice).get(f"{URL}?consolidated={value}").json()["results"]]
        assert sorted(ids) == sorted(expected)
