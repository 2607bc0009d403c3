"""A GPU's health from the signals its agent reads (docs/gpu_health.md): the latest values, notes
on those that warn, and the two features the plan takes from them. Pure Python, no Django.

There is no trained model from these signals to a slowdown or a failure (no data to train one
on), so the features are rules, each resting on what the hardware documents:
- At risk: uncorrectable ECC errors, retired pages or remapped rows (lifetime counts) rose since
  the board was first seen. NVIDIA's dynamic page retirement and row remapping docs treat a board
  whose retirements or remappings keep coming as due for service, and field studies of GPU
  failures (Ostrouchov et al., SC 2020, Titan's 18,688 GPUs) saw such errors precede failures.
  An at-risk board is planned like a board flagged slow (scheduler/optimizer/board_speeds.py).
  So is one that reported an XID error NVIDIA's XID catalogue (docs.nvidia.com/deploy/xid-errors)
  puts on the hardware (FAILING_XIDS: double-bit ECC, row remapping or page retirement events
  and their failures, NVLink, fallen off the bus, ECC rate and containment); an application's
  XIDs (13 graphics engine exception, 31 GPU memory page fault, 43 GPU stopped processing, and
  any other) are shown only: the catalogue names the user's program as their usual cause.
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
#: XIDs that mean failing hardware, by NVIDIA's XID catalogue names.
FAILING_XIDS = {
    48: "double bit ECC error", 63: "ECC page retirement or row remapping recording event",
    64: "ECC page retirement or row remapper recording failure", 74: "NVLink error",
    79: "GPU has fallen off the bus", 92: "high single-bit ECC error rate",
    93: "non-fatal violation of provisioned InfoROM wear limit", 94: "contained ECC error",
    95: "uncontained ECC error",
}
#: XIDs the catalogue attributes to applications, named where shown.
APPLICATION_XIDS = {13: "graphics engine exception", 31: "GPU memory page fault", 43: "GPU stopped processing"}
#: The highest XID code a sample may carry (the catalogue's codes are below it).
MAX_XID = 999
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
    xids = _xids(sample, previous)
    if "xid_last" in xids:
        notes.append(f"last XID {_xid_name(xids['xid_last'])}")
    failing = [f"XID {_xid_name(xids['xid_failing'])}"] if "xid_failing" in xids else []
    health = {**latest, **xids, "throttle_reasons": throttled, "first": first, "notes": notes + risen + failing}
    if "cleared" in previous:
        health["cleared"] = previous["cleared"]
    if risen or failing:
        health["at_risk"] = "; ".join(risen + failing)
    if any(name in BRAKES for name in throttled) and sample.get("ts") is not None:
        health["braked_since"] = previous.get("braked_since") or sample["ts"].isoformat()
        braked_s = (sample["ts"] - datetime.fromisoformat(health["braked_since"])).total_seconds()
        if braked_s >= SUSTAINED_S:
            speed, refused = clock_speed(sample.get("sm_clock_mhz"), sample.get("sm_clock_max_mhz"))
            health["throttled_speed"] = speed
            health["notes"].append(refused or f"planned at {speed:.2f} of its speed: braked {braked_s:.0f} s")
    return health


def cleared(health: dict, *, by: str, at: datetime) -> dict:
    """The health after an operator cleared its at-risk flag (the board was serviced, or the
    rise was understood): the counts it has now become its baseline, a failing XID is
    forgotten, and `cleared` says who, when and what was cleared. A later rise, or a failing
    XID reported after it, puts the board at risk again."""
    out = {key: value for key, value in health.items() if key not in ("at_risk", "xid_failing")}
    out["first"] = {**health.get("first", {}), **{key: health[key] for key in COUNTS if key in health}}
    out["notes"] = [n for n in health.get("notes", []) if " rose from " not in n and not n.startswith("XID ")]
    out["cleared"] = {"by": by, "at": at.isoformat(), "was": health.get("at_risk", "")}
    return out


def _xids(sample: dict, previous: dict) -> dict:
    """The XID part of the health: the count and last code reported and, kept from the first
    time, `xid_failing`, the first code of FAILING_XIDS reported. A count above the one kept
    brings new events; one below it too where it is above 0 (the agent restarted and counts from
    0 again). Only a batch's newest sample is read: an application's XID reported after a
    failing one within a batch hides it."""
    out = {key: previous[key] for key in ("xid_count", "xid_last", "xid_failing") if key in previous}
    count = sample.get("xid_count")
    if count is None:
        return out
    before = previous.get("xid_count", 0)
    out["xid_count"] = count
    code = sample.get("xid_last")
    if code is not None and (count > before or 0 < count < before):
        out["xid_last"] = code
        if code in FAILING_XIDS:
            out.setdefault("xid_failing", code)
    return out


def _xid_name(code: int) -> str:
    name = FAILING_XIDS.get(code) or APPLICATION_XIDS.get(code)
    return f"{code} ({name})" if name else str(code)


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


def braked_now(health: dict) -> bool:
    """Whether the board's newest sample says a brake holds its clocks back (thermal, hardware
    slowdown, power brake; GOGH's own power cap is no brake): a job's rate there tells how hard
    the brake bites, not how its workload runs, so it is no reading of a power-limit curve."""
    return any(name in BRAKES for name in health.get("throttle_reasons") or ())


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
