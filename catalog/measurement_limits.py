"""Physical limits of one measurement, checked wherever measurements come in (the API and the
CSV import), so that one absurd value cannot poison the catalog. Without them a 1e308 steps/s
made every scheduling round's objective infinite, a peak memory of 1e300 GB kept its workload
pending for good, and a record stamped in the year 9999 stayed the newest of its window.

No Django: the CSV reader, which runs without a database, uses it too."""
from datetime import UTC, datetime, timedelta

#: Steps per second: no training or inference step takes under a microsecond.
MAX_THROUGHPUT = 1e6
#: Average power per GPU in W, above any GPU's board power (B200 1000 W, GB200 1200 W).
MAX_POWER_PER_GPU_W = 2000.0
#: Memory of one GPU in GB (the largest today hold under 300).
MAX_GPU_MEMORY_GB = 4096.0
#: GPUs of one measured job (the column is a small integer).
MAX_NUM_GPUS = 32767
#: Peak memory may exceed the GPU type's nominal memory by this factor: tools mix GB and GiB
#: (16 GiB = 17.2 GB), so a job that fills a "16 GB" GPU may report up to about 17.2.
MEMORY_TOLERANCE = 1.1
#: How far ahead of the server's clock a measurement may be stamped (clock skew).
MAX_CLOCK_AHEAD = timedelta(minutes=5)
#: Nothing was measured for deep learning on a GPU before this.
EARLIEST_OBSERVATION = datetime(2000, 1, 1, tzinfo=UTC)


def limit_problems(*, now: datetime, throughput: float | None = None, partner_throughput: float | None = None,
                   power_w: float | None = None, num_gpus: int = 1, memory_gb: float | None = None,
                   gpu_memory_gb: float | None = None, observed_at: datetime | None = None) -> dict[str, str]:
    """{field: reason} for every value beyond what a real measurement can be; {} when none.
    `gpu_memory_gb` is the GPU type's memory, when the caller knows the type."""
    problems = {}
    for name, value in (("throughput", throughput), ("partner_throughput", partner_throughput)):
        if value is not None and value > MAX_THROUGHPUT:
            problems[name] = f"{value:g} steps/s is above {MAX_THROUGHPUT:g}, more than any job runs"
    if power_w is not None and power_w > MAX_POWER_PER_GPU_W * num_gpus:
        problems["power_w"] = (f"{power_w:g} W is above {MAX_POWER_PER_GPU_W:g} W per GPU "
                               f"({num_gpus} GPU{'s' if num_gpus != 1 else ''})")
    if memory_gb is not None and gpu_memory_gb and memory_gb > gpu_memory_gb * MEMORY_TOLERANCE:
        problems["memory_gb"] = f"{memory_gb:g} GB is more than the GPU type has ({gpu_memory_gb:g} GB)"
    if observed_at is not None:
        if observed_at > now + MAX_CLOCK_AHEAD:
            problems["observed_at"] = (f"{observed_at.isoformat()} is more than {MAX_CLOCK_AHEAD.seconds} s "
                                       "in the future; is the clock set?")
        elif observed_at < EARLIEST_OBSERVATION:
            problems["observed_at"] = f"{observed_at.isoformat()} is before {EARLIEST_OBSERVATION.year}"
    return problems
