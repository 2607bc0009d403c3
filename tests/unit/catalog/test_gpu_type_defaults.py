"""GPU type defaults: complete, consistent and traceable; the pure modules need no Django."""
import subprocess
import sys
from pathlib import Path

import pytest

from catalog.gpu_type_defaults import GPU_TYPE_DEFAULTS
from catalog.models import GpuType
from catalog.models.gpu_types import validate_power_curve

PURE_MODULES = ["catalog.gavel", "catalog.gpu_type_defaults", "catalog.measurement_csv"]


def test_the_ten_types():
    assert [d.name for d in GPU_TYPE_DEFAULTS] == [
        "k80", "p100", "v100", "t4", "a100", "h100", "h200", "l4", "a10", "l40s"]
    facts = {d.name: (d.memory_gb, d.tdp_w) for d in GPU_TYPE_DEFAULTS}
    assert facts == {
        "k80": (12, 150), "p100": (16, 250), "v100": (16, 300), "t4": (16, 70), "a100": (40, 400), "h100": (80, 700),
        "h200": (141, 700), "l4": (24, 72), "a10": (24, 150), "l40s": (48, 350),
    }


@pytest.mark.django_db
@pytest.mark.parametrize("default", GPU_TYPE_DEFAULTS, ids=lambda d: d.name)
def test_every_value_has_provenance_and_fits_the_model(default):
    fields = default.model_fields()
    assert set(fields["provenance"]) == {"memory_gb", "tdp_w", "idle_w", "power_curve", "product_names"}
    assert "NVML" in fields["provenance"]["power_curve"] and "assumption" in fields["provenance"]["power_curve"]
    assert 0 < default.idle_w < default.tdp_w
    assert fields["power_curve"] == [[0.0, default.idle_w], [1.0, default.tdp_w]]
    validate_power_curve(fields["power_curve"])
    assert default.product_names
    GpuType(**fields).full_clean(validate_unique=False)  # check constraints run as a query


def test_pure_modules_import_no_django():
    code = f"import sys; import {', '.join(PURE_MODULES)}; print(any(m.startswith('django') for m in sys.modules))"
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert out.stdout.strip() == "False"
