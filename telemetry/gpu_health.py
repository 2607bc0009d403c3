"""A GPU's health from the signals its agent reads (docs/gpu_health.md): the latest values, notes
on those that warn, and the two features the plan takes from them. Pure Python, no Django.

There is no trained model from these signals to a slowdown or a failure (no data to train one
on), so the features are rules, each resting on what the hardware documents:
- At risk: uncorrectable ECC errors, retired pages or remapped rows (lifetime counts) rose since
  the board was first seen. NVIDIA's dynamic page retirement and row remapping docs treat a board
  whose retirements or remappings keep coming as due for service, and field studies of GPU
  failures (Ostrouchov et al., SC 2020, Titan's 18,688 GPUs) saw such errors precede failures.
  An at-risk board is planned like a board flagged slow (scheduler/optimizer/board_speeds.py).
- Throttled now: NVML's hardware slowdown, thermal slowdown or power brake reasons reported for
  SUSTAINED_S in a row (one sample is a blip). The board is then planned at its SM clock over its
  maximum SM clock, both read in the same sample; clocks that are absent or impossible (above the
  maximum, a maximum of 0) are refused with a note and NVML's documented floor for a hardware
  slowdown (core clocks cut by a factor of 2 or more) is used instead. A clock ratio is the
  pessimistic side: compute-bound steps slow in proportion, memory-bound ones less.

A software power cap (the limit GOGH sets) and idle clocks are shown only: they are the plan, not
a fault. Temperature at or above HOT_C is noted; corrected ECC errors are shown only (every board
with ECC sees some).
"""
from datetime import datetime
from typing import NamedTuple

HOT_C = 85.0
#: Seconds of brake reasons in a row before the plan follows them.
SUSTAINED_S = 300.0
#: The speed a braked board is planned at when its clocks cannot tell (NVML: a hardware slowdown
#: cuts core clocks by a factor of 2 or more).
BRAKED_SPEED = 0.5
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
    """The health to keep for a GPU after its newest `sample` (the ingest's dict; `ts` a datetime),
    given what was kept before (`previous`, {} at first): the latest readings, the first lifetime
    counts seen, the notes, and where they apply `at_risk` (the reason), `braked_since` (ISO
    time of the first braked sample in a row) and `throttled_speed` (the speed to plan at)."""
    latest = {key: sample.get(key) for key in SHOWN if sample.get(key) is not None}
    throttled = throttle_names(sample.get("throttle_reasons"))
    first = dict(previous.get("first", {}))
    for key in COUNTS:
        if key in latest:
            first.setdefault(key, latest[key])
    notes = [f"clocks held back: {name}" for name in throttled if name in BRAKES]
    if latest.get("temperature_c", 0) >= HOT_C:
        notes.append(f"hot: {latest['temperature_c']:.0f} C (noted from {HOT_C:.0f} C)")
    risen = [
        f"{key.replace('_', ' ')} rose from {first[key]} to {latest[key]}"
        for key in COUNTS if key in latest and latest[key] > first[key]
    ]
    health = {**latest, "throttle_reasons": throttled, "first": first, "notes": notes + risen}
    if risen:
        health["at_risk"] = "; ".join(risen)
    if any(name in BRAKES for name in throttled) and sample.get("ts") is not None:
        health["braked_since"] = previous.get("braked_since") or sample["ts"].isoformat()
        braked_s = (sample["ts"] - datetime.fromisoformat(health["braked_since"])).total_seconds()
        if braked_s >= SUSTAINED_S:
            speed, refused = clock_speed(sample.get("sm_clock_mhz"), sample.get("sm_clock_max_mhz"))
            health["throttled_speed"] = speed
            health["notes"].append(refused or f"planned at {speed:.2f} of its speed: braked {braked_s:.0f} s")
    return health


def clock_speed(clock_mhz: float | None, max_mhz: float | None) -> tuple[float, str | None]:
    """(the speed a braked board is planned at, why its clocks were refused or None): its SM clock
    over its maximum, both from one sample, or BRAKED_SPEED where they are absent or impossible."""
    if clock_mhz is None or max_mhz is None:
        return BRAKED_SPEED, f"planned at {BRAKED_SPEED:.2f} of its speed: braked, clocks not reported"
    if max_mhz <= 0 or clock_mhz < 0 or clock_mhz > max_mhz:
        return BRAKED_SPEED, (f"planned at {BRAKED_SPEED:.2f} of its speed: braked, clocks refused "
                              f"(SM {clock_mhz:g} MHz of at most {max_mhz:g} MHz)")
    return clock_mhz / max_mhz, None


def plans_slower(health: dict) -> tuple[float, str]:
    """(the speed its health allows, 1.0 when nothing limits it; why it is planned like a board
    flagged slow, "" when it is not): at risk, or braked for SUSTAINED_S."""
    reasons = [f"at risk: {health['at_risk']}"] if health.get("at_risk") else []
    speed = health.get("throttled_speed", 1.0)
    if "throttled_speed" in health:
        reasons.append(f"throttled: {', '.join(n for n in health['throttle_reasons'] if n in BRAKES)}")
    return speed, "; ".join(reasons)


class BoardPlan(NamedTuple):
    speed: float  # what the round plans the board at (GpuSpec.speed)
    slow: bool  # planned like a board flagged slow (GpuSpec.slow): used last, only where T_min holds
    at_risk: bool  # expected to fail (GpuSpec.at_risk): its running jobs leave it at their next checkpoint


def board_plan(learnt: float, flagged: bool, health: dict) -> BoardPlan:
    """How a round plans a board: its learnt speed lowered to what its health allows, flagged
    slow where the speed tracker flags it (`flagged`) or its health does, and at risk where its
    health says so. One rule for the control plane's round (scheduler/boards.py) and simulate's
    (scheduler/simulation/board_watch.py), so that what simulate measures is what the round does."""
    allowed, reason = plans_slower(health)
    return BoardPlan(min(learnt, allowed), bool(flagged or reason), bool(health.get("at_risk")))
