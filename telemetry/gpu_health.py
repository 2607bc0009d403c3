"""A GPU's health from the signals its agent reads (docs/gpu_health.md): the latest values, and
notes on those that warn of a failing or degrading board. Pure Python, no Django.

Notes are shown next to the board's speed flag (console, API, /metrics); they do not change
the plan. The speed the board delivers (telemetry.gpu_speed) is what the optimiser acts on:
there is no trained model from these signals to a slowdown (no data to train one on), so they
are evidence for the operator, not features of a prediction.

Which signals note what:
- clock throttling for heat or the power brake (NVML's HW slowdown, SW/HW thermal slowdown, HW
  power brake reasons): noted while reported. A software power cap (the limit GOGH sets) and
  idle clocks are shown only: they are the plan, not a fault.
- temperature at or above HOT_C: noted.
- uncorrectable ECC errors, retired pages and remapped rows (lifetime counts): noted once they
  rise above the first value seen for the board (its count when GOGH started watching it).
  Corrected ECC errors are shown only: every board with ECC sees some.
"""

HOT_C = 85.0
#: NVML's clocks event (throttle) reason bits (nvmlClocksEventReason*), by the name shown.
THROTTLE_BITS = {
    "idle": 0x1, "applications clocks": 0x2, "software power cap": 0x4, "hardware slowdown": 0x8,
    "sync boost": 0x10, "software thermal slowdown": 0x20, "hardware thermal slowdown": 0x40,
    "power brake": 0x80, "display clocks": 0x100,
}
BRAKES = ("hardware slowdown", "software thermal slowdown", "hardware thermal slowdown", "power brake")
COUNTS = ("ecc_uncorrected", "retired_pages", "remapped_rows")
SHOWN = ("temperature_c", "ecc_corrected", *COUNTS)


def throttle_names(mask: int | None) -> list[str]:
    return [name for name, bit in THROTTLE_BITS.items() if mask and mask & bit]


def health_of(sample: dict, previous: dict) -> dict:
    """The health to keep for a GPU after its newest `sample` (the ingest's dict), given what was
    kept before (`previous`, {} at first): the latest readings, the first lifetime counts seen,
    and the notes."""
    latest = {key: sample.get(key) for key in SHOWN if sample.get(key) is not None}
    throttled = throttle_names(sample.get("throttle_reasons"))
    first = dict(previous.get("first", {}))
    for key in COUNTS:
        if key in latest:
            first.setdefault(key, latest[key])
    notes = [f"clocks held back: {name}" for name in throttled if name in BRAKES]
    if latest.get("temperature_c", 0) >= HOT_C:
        notes.append(f"hot: {latest['temperature_c']:.0f} C (noted from {HOT_C:.0f} C)")
    notes += [
        f"{key.replace('_', ' ')} rose from {first[key]} to {latest[key]}"
        for key in COUNTS if key in latest and latest[key] > first[key]
    ]
    return {**latest, "throttle_reasons": throttled, "first": first, "notes": notes}
