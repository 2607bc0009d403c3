"""The production path of issue 18's regression: `import_measurements` of one row on a new GPU
type, `train_predictor`, then a job's prediction there (the default structured predictor)."""
import pytest
from django.core.management import call_command

from catalog.models import GpuType, PredictionRecord
from catalog.services import predictors as services

from .db_slice import load_slice

pytestmark = pytest.mark.django_db


@pytest.fixture
def sliced(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    settings.GOGH_PREDICTOR_ARCHITECTURE = "structured"
    return load_slice()


def a100_tau(record: PredictionRecord) -> float:
    estimates = record.estimates
    return estimates["tau"][estimates["configs"].index(["a100", 1, True])]


def test_one_imported_row_on_a_new_type_is_not_every_workloads_estimate_there(sliced, tmp_path):
    workloads, _ = sliced
    GpuType.objects.create(name="a100", memory_gb=40, tdp_w=400, idle_w=48, power_curve=[[0, 48], [1, 400]])
    rows = tmp_path / "a100.csv"
    rows.write_text("workload,gpu_type,throughput,source\nResNet-18 (batch size 32),a100,90.0,profiling\n")
    call_command("import_measurements", str(rows))
    call_command("train_predictor")
    estimates = {name: a100_tau(services.prediction_create(workload=workloads[name]))
                 for name in ("ResNet-18 (batch size 32)", "ResNet-18 (batch size 64)", "LM (batch size 10)",
                              "A3C", "Recommendation (batch size 1024)")}
    assert estimates.pop("ResNet-18 (batch size 32)") == pytest.approx(90.0)
    assert all(abs(value / 90.0 - 1) > 0.2 for value in estimates.values()), estimates
    # ResNet-18 at batch 64 runs a little slower than at 32 on every reference type; on a100 too.
    assert estimates["ResNet-18 (batch size 64)"] < 90.0
