"""The suite's CSV is what `manage.py import_measurements` imports, its OOM rows included."""
import torch
from django.core.management import call_command

from catalog.models import Measurement
from catalog.profiling import __main__ as cli, models


def test_the_suites_csv_imports(v100, resnet50, lm, tmp_path, monkeypatch):
    def lm_too_big(*args):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.00 GiB")

    monkeypatch.setitem(models._BUILDERS, "LM", lm_too_big)
    path = tmp_path / "suite.csv"
    status = cli.main(["--cases", "ResNet-50 (batch size 64),ResNet-50 (batch size 64) + LM (batch size 20)",
                       "--tiny", "--device", "cpu", "--out", str(path), "--gpu-type", "v100"])
    assert status == 0
    call_command("import_measurements", str(path))
    alone, pair = Measurement.objects.order_by("id")
    assert (alone.workload, alone.gpu_type, alone.partner, alone.source) == (resnet50, v100, None, "profiling")
    assert alone.throughput > 0 and alone.reference == "gogh-suite/1/ResNet-50 (batch size 64)"
    assert (pair.partner, pair.throughput, pair.partner_throughput) == (lm, 0.0, 0.0)  # does not fit: kept
