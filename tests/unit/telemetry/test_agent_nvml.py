"""The real NVML backend code against a fake pynvml with nvidia-ml-py's interface."""
import pynvml
import pytest

from telemetry.agent.gpus import NoGpuDriver
from telemetry.agent.nvml import NvmlBackend

from .fake_nvml import FAKED_FUNCTIONS, fake_nvml


def test_the_fake_has_the_real_modules_function_names():
    fake = fake_nvml()
    for name in FAKED_FUNCTIONS:
        assert callable(getattr(pynvml, name)), name
        assert callable(getattr(fake, name)), name


def test_devices_report_name_uuid_memory_bus_and_numa():
    backend = NvmlBackend(nvml=fake_nvml(count=3))
    backend.open()
    devices = backend.devices()
    assert [d.index for d in devices] == [0, 1, 2]
    first = devices[2].report()
    assert first == {
        "index": 2, "uuid": "GPU-fake-2", "product_name": "Tesla V100-SXM2-16GB",
        "pci_bus_id": "00000000:06:00.0", "numa_node": 1, "memory_gb": 16.0,
        "power_limit_min_w": 100.0, "power_limit_max_w": 300.0, "power_limit_default_w": 300.0, "power_limit_w": 300.0,
    }


def test_a_sample_converts_nvml_units(tmp_path):
    backend = NvmlBackend(nvml=fake_nvml(count=2))
    backend.open()
    backend.devices()
    samples = backend.sample(now=1_700_000_000.0)
    assert [s.uuid for s in samples] == ["GPU-fake-0", "GPU-fake-1"]
    second = samples[1]
    assert second.power_w == pytest.approx(151.0)  # mW -> W
    assert second.utilization == pytest.approx(0.51)  # percent -> 0..1
    assert second.memory_used_mb == pytest.approx(2048)  # bytes -> MiB
    assert (second.sm_clock_mhz, second.sm_clock_max_mhz, second.temperature_c) == (1380, 1530, 61)
    assert (second.ecc_corrected, second.ecc_uncorrected, second.retired_pages) == (3, 0, 1)
    assert (second.throttle_reasons, second.remapped_rows) == (0x4 | 0x40, 3)
    payload = second.payload()
    assert payload["gpu"] == "GPU-fake-1" and payload["ts"].startswith("2023-11-14T22:13:20")


def test_unsupported_readings_are_null_not_a_crash(tmp_path):
    (tmp_path / "0000:04:00.0").mkdir()
    (tmp_path / "0000:04:00.0" / "numa_node").write_text("-1\n")
    (tmp_path / "0000:05:00.0").mkdir()
    (tmp_path / "0000:05:00.0" / "numa_node").write_text("1\n")
    unsupported = {"nvmlDeviceGetRetiredPages", "nvmlDeviceGetTotalEccErrors", "nvmlDeviceGetPowerUsage",
                   "nvmlDeviceGetNumaNodeId", "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetRemappedRows",
                   "nvmlDeviceGetMaxClockInfo"}
    backend = NvmlBackend(nvml=fake_nvml(count=2, unsupported=unsupported), sysfs=tmp_path)
    backend.open()
    devices = backend.devices()
    assert [d.numa_node for d in devices] == [None, 1]  # sysfs fallback; -1 means none
    sample = backend.sample(now=0.0)[0]
    assert sample.power_w is None and sample.ecc_corrected is None and sample.retired_pages is None
    assert sample.throttle_reasons is None and sample.remapped_rows is None and sample.sm_clock_max_mhz is None
    assert sample.utilization == pytest.approx(0.5)
    assert "numa_node" not in devices[0].report()


@pytest.mark.parametrize("code", [pynvml.NVML_ERROR_LIBRARY_NOT_FOUND, pynvml.NVML_ERROR_DRIVER_NOT_LOADED])
def test_no_driver_is_a_clear_error(code):
    backend = NvmlBackend(nvml=fake_nvml(init_error=code))
    with pytest.raises(NoGpuDriver, match="--simulate"):
        backend.open()
