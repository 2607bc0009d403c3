"""Mean power and utilization from NVML (faked at the module edge, as the agent's tests do)."""
import pynvml

from catalog.profiling.power import PowerSampler
from tests.unit.telemetry.fake_nvml import fake_nvml


def test_power_is_the_sum_of_the_jobs_gpus_means_and_other_gpus_are_ignored():
    sampler = PowerSampler(["GPU-fake-0", "GPU-fake-1"], interval_s=3600, nvml=fake_nvml(count=3, power_mw=200_000))
    sampler.start()  # one reading at once, then the interval
    power, utilization = sampler.stop()  # and one at the end
    assert power == 200.0 + 201.0  # GPU 2 (202 W) is not the job's
    assert utilization == (0.50 + 0.51) / 2


def test_no_driver_or_no_reading_is_unknown_not_zero():
    sampler = PowerSampler(["GPU-fake-0"], nvml=fake_nvml(init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED))
    sampler.start()
    assert sampler.stop() == (None, None)
    unsupported = ("nvmlDeviceGetPowerUsage", "nvmlDeviceGetUtilizationRates")
    sampler = PowerSampler(["GPU-fake-0"], interval_s=3600, nvml=fake_nvml(count=1, unsupported=unsupported))
    sampler.start()
    assert sampler.stop() == (None, None)
