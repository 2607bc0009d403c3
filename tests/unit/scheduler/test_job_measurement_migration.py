"""Migration 0011: a job's telemetry measurements, once found by the string "telemetry: job
<id>" in their reference, are linked to the job."""
import pytest
from django.utils import timezone

from tests.unit.migrating import migrate_to, migrate_to_newest

BEFORE = ("scheduler", "0010_allocation_start_index")
AFTER = ("scheduler", "0011_job_measurement")


@pytest.mark.django_db(transaction=True)
def test_telemetry_measurements_are_linked_to_the_job_their_reference_names():
    old = migrate_to(BEFORE)
    Job, Tenant, User = (
        old.get_model("scheduler", "Job"),
        old.get_model("scheduler", "Tenant"),
        old.get_model("auth", "User"),
    )
    Workload, GpuType = old.get_model("catalog", "Workload"), old.get_model("catalog", "GpuType")
    Measurement = old.get_model("catalog", "Measurement")
    owner, tenant = User.objects.create(username="u"), Tenant.objects.create(name="t", slug="t")
    workload = Workload.objects.create(name="w")
    gpu_type = GpuType.objects.create(name="v100", memory_gb=16, idle_w=35, tdp_w=300)
    job, other = (
        Job.objects.create(owner=owner, tenant=tenant, workload=workload, min_throughput=1, max_gpus=1, state="running")
        for _ in range(2)
    )

    def measurement(reference, source="telemetry"):
        return Measurement.objects.create(workload=workload, gpu_type=gpu_type, throughput=1.0, source=source,
                                          reference=reference, observed_at=timezone.now()).pk

    mine = [measurement(f"telemetry: job {job.pk}"), measurement(f"telemetry: job {job.pk}")]
    theirs = measurement(f"telemetry: job {other.pk}")
    unlinked = [
        measurement(f"telemetry: job {other.pk + 1000}"),  # a job deleted since
        measurement(f"telemetry: job {job.pk} on node3"),  # not the string telemetry wrote
        measurement(f"telemetry: job {job.pk}", source="profiling"),  # an operator's file that says so
        measurement("gavel:resnet50"),
    ]

    new = migrate_to(AFTER)
    JobMeasurement = new.get_model("scheduler", "JobMeasurement")
    links = dict(JobMeasurement.objects.values_list("measurement_id", "job_id"))
    assert links == {mine[0]: job.pk, mine[1]: job.pk, theirs: other.pk}
    assert not set(unlinked) & set(links)
    migrate_to_newest()  # as the other tests expect
