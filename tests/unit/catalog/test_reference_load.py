"""The reference catalog loads completely, and loading it again changes nothing."""
import json
import re
from io import StringIO

import pytest
from django.core.management import call_command

from catalog.gavel import GAVEL_THROUGHPUTS
from catalog.models import GpuType, Measurement, Workload
from catalog.services import LoadCounts, catalog_load_reference
from catalog.services.reference import REFERENCE_OBSERVED_AT

SMALL = {
    "v100": {
        "('A3C', 1)": {"null": 2.0, "('CycleGAN', 1)": [1.0, 0.5]},
        "('A3C', 2)": {"null": 0.0},
    },
    "v100_unconsolidated": {"('A3C', 2)": {"null": 3.0}},
}


def load_command() -> dict[str, tuple[int, int, int]]:
    """Run load_reference_catalog; its output as {label: (created, updated, unchanged)}."""
    out = StringIO()
    call_command("load_reference_catalog", stdout=out)
    counts = {}
    for line in out.getvalue().splitlines():
        label, created, updated, unchanged = re.fullmatch(
            r"(.+?):\s+(\d+) created\s+(\d+) updated\s+(\d+) unchanged", line
        ).groups()
        counts[label] = (int(created), int(updated), int(unchanged))
    return counts


@pytest.mark.django_db
def test_full_load_twice():
    raw = json.loads(GAVEL_THROUGHPUTS.read_text())
    values = [
        (worker_type, value)
        for worker_type, jobs in raw.items()
        for partners in jobs.values()
        for value in partners.values()
    ]
    total = len(values)

    assert load_command() == {
        "GPU types": (10, 0, 0),
        "workloads": (30, 0, 0),  # 26 of the reference data, 4 of the benchmark suite
        "measurements": (total, 0, 0),
    }
    assert (GpuType.objects.count(), Workload.objects.count(), Measurement.objects.count()) == (10, 30, total)

    assert load_command() == {
        "GPU types": (0, 0, 10),
        "workloads": (0, 0, 30),
        "measurements": (0, 0, total),
    }
    assert (GpuType.objects.count(), Workload.objects.count(), Measurement.objects.count()) == (10, 30, total)

    reference = Measurement.objects.filter(source="reference")
    zeros = sum(1 for _, value in values if value in (0, [0, 0]))
    assert reference.filter(throughput=0).exclude(partner_throughput__gt=0).count() == zeros
    spread = sum(1 for worker_type, _ in values if worker_type.endswith("_unconsolidated"))
    assert reference.filter(consolidated=False).count() == spread
    assert not reference.exclude(observed_at=REFERENCE_OBSERVED_AT).exists()

    job, partner = "('ResNet-50 (batch size 64)', 1)", "('LM (batch size 20)', 1)"
    pair = reference.get(
        workload__name="ResNet-50 (batch size 64)", gpu_type__name="v100", num_gpus=1, consolidated=True,
        partner__name="LM (batch size 20)",
    )
    assert [pair.throughput, pair.partner_throughput] == raw["v100"][job][partner]
    assert pair.reference == f"gavel:v100:{job}:{partner}"
    resnet = Workload.objects.get(name="ResNet-50 (batch size 64)")
    assert (resnet.family, resnet.batch_size, resnet.kind) == ("ResNet-50", 64, "training")
    assert "ImageNet" in resnet.description
    assert Workload.objects.get(name="A3C").batch_size is None


@pytest.fixture
def small_file(tmp_path):
    path = tmp_path / "throughputs.json"
    path.write_text(json.dumps(SMALL))
    return path


@pytest.mark.django_db
def test_records_become_measurements(small_file):
    result = catalog_load_reference(throughputs_path=small_file)
    assert result.measurements == LoadCounts(created=4)
    rows = {
        (m.num_gpus, m.consolidated, m.partner.name if m.partner else None): (m.throughput, m.partner_throughput)
        for m in Measurement.objects.select_related("partner")
    }
    assert rows == {
        (1, True, None): (2.0, None),
        (1, True, "CycleGAN"): (1.0, 0.5),
        (2, True, None): (0.0, None),
        (2, False, None): (3.0, None),
    }


@pytest.mark.django_db
def test_operator_edits_of_types_and_workloads_are_kept(small_file):
    GpuType.objects.create(name="v100", memory_gb=32, tdp_w=250, idle_w=30, description="our PCIe boards")
    Workload.objects.create(name="A3C", family="RL", description="ours")
    result = catalog_load_reference(throughputs_path=small_file)
    assert result.gpu_types == LoadCounts(created=9, unchanged=1)
    assert result.workloads == LoadCounts(created=5, unchanged=1)  # the file's other one, the suite's four
    v100 = GpuType.objects.get(name="v100")
    assert (v100.memory_gb, v100.tdp_w, v100.idle_w, v100.description) == (32, 250, 30, "our PCIe boards")
    assert Workload.objects.get(name="A3C").description == "ours"
    assert GpuType.objects.get(name="h100").provenance["tdp_w"].startswith("NVIDIA H100 datasheet")


@pytest.mark.django_db
def test_changed_reference_rows_are_restored_and_other_sources_untouched(small_file):
    catalog_load_reference(throughputs_path=small_file)
    alone = Measurement.objects.get(num_gpus=1, partner=None)
    Measurement.objects.filter(pk=alone.pk).update(throughput=99.0)
    profiled = Measurement.objects.create(
        workload=alone.workload, gpu_type=alone.gpu_type, throughput=5.0, source="profiling",
        observed_at=REFERENCE_OBSERVED_AT,
    )
    result = catalog_load_reference(throughputs_path=small_file)
    assert result.measurements == LoadCounts(updated=1, unchanged=3)
    alone.refresh_from_db()
    profiled.refresh_from_db()
    assert (alone.throughput, profiled.throughput, Measurement.objects.count()) == (2.0, 5.0, 5)
