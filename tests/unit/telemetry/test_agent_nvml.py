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
    assert sample.xid_count == 0  # XID events are still read
    assert sample.utilization == pytest.approx(0.5)
    assert "numa_node" not in devices[0].report()


def test_xid_events_are_drained_each_sample_counted_and_the_last_code_sent():
    fake = fake_nvml(count=2)
    backend = NvmlBackend(nvml=fake)
    backend.open()
    backend.devices()
    first = backend.sample(now=0.0)
    assert [(s.xid_count, s.xid_last) for s in first] == [(0, None), (0, None)]  # registered, none yet
    fake.xids[1] += [13, 79]
    second = backend.sample(now=1.0)
    assert [(s.xid_count, s.xid_last) for s in second] == [(0, None), (2, 79)]
    assert second[1].payload()["xid_count"] == 2 and second[1].payload()["xid_last"] == 79
    fake.xids[1].append(31)
    assert (backend.sample(now=2.0)[1].xid_count, backend.sample(now=3.0)[1].xid_last) == (3, 31)
    backend.close()
    assert fake.event_sets == {}  # every set freed


def test_a_device_that_cannot_register_xid_events_reports_them_unknown_not_zero():
    for unsupported in ({"nvmlDeviceRegisterEvents"}, {"nvmlEventSetCreate"}):
        fake = fake_nvml(count=1, unsupported=unsupported)
        backend = NvmlBackend(nvml=fake)
        backend.open()
        backend.devices()
        (sample,) = backend.sample(now=0.0)
        assert (sample.xid_count, sample.xid_last) == (None, None)
        assert "nvmlEventSetWait" not in fake.calls and fake.event_sets == {}  # the refused set freed


def test_listing_the_devices_again_registers_them_anew_and_keeps_their_counts():
    fake = fake_nvml(count=1)
    backend = NvmlBackend(nvml=fake)
    backend.open()
    backend.devices()
    fake.xids[0].append(48)
    backend.sample(now=0.0)
    backend.devices()
    assert len(fake.event_sets) == 1
    fake.xids[0].append(13)
    assert (backend.sample(now=1.0)[0].xid_count, backend.sample(now=2.0)[0].xid_last) == (2, 13)


@pytest.mark.parametrize("code", [pynvml.NVML_ERROR_LIBRARY_NOT_FOUND, pynvml.NVML_ERROR_DRIVER_NOT_LOADED])
def test_no_driver_is_a_clear_error(code):
    backend = NvmlBackend(nvml=fake_nvml(init_error=code))
    with pytest.raises(NoGpuDriver, match="--simulate"):
        backend.open()
