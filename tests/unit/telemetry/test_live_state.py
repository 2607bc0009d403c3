"""State builders of telemetry's live kinds (no database)."""
from datetime import UTC, datetime

from catalog.models import GpuType
from telemetry import live
from telemetry.models import Gpu, GpuSample, Node

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_gpu_state_carries_the_newest_sample():
    gpu = Gpu(pk=3, node_id=1, node=Node(pk=1, hostname="a"), index=0, uuid="GPU-0", gpu_type=GpuType(name="v100"),
              state="healthy")
    sample = GpuSample(ts=T0, power_w=250.0, utilization=0.9, temperature_c=70.0, memory_used_mb=None)
    data = live.gpu_state(gpu, sample=sample)
    assert (data["power_w"], data["utilization"], data["temperature_c"], data["sampled_at"]) == (
        250.0,
        0.9,
        70.0,
        T0.isoformat(),
    )
    assert live.gpu_state(gpu, sample=None)["power_w"] is None
