"""Whether a service can be created (docs/services.md, "Bad input"): the field-by-field reasons
the API answers with a 400. Pure, so that its rules are checked without a database; the limits
it checks are the ones the models and the serializers take from here."""
import math

from . import latency

#: Replicas a service may ask for, at most.
MAX_REPLICAS = 64
MAX_BATCH_SIZE = 65536


def service_problems(data: dict, fastest: tuple[str, float] | None, margin: float) -> dict[str, list[str]]:
    """Field -> messages for a service that cannot be created; {} when it can. `fastest`: the
    fastest predicted single-GPU (type, steps/s) of its workload (None: unknown, not checked)."""
    problems: dict[str, list[str]] = {}
    low, high = data.get("min_replicas", 1), data.get("max_replicas", 1)
    if low < 1:
        problems["min_replicas"] = ["At least 1."]
    if high > MAX_REPLICAS:
        problems["max_replicas"] = [f"At most {MAX_REPLICAS}."]
    if low > high:
        problems.setdefault("min_replicas", []).append(f"{low} is above max_replicas ({high}).")
        problems.setdefault("max_replicas", []).append(f"{high} is below min_replicas ({low}).")
    if not 1 <= data["batch_size"] <= MAX_BATCH_SIZE:
        problems["batch_size"] = [f"From 1 to {MAX_BATCH_SIZE}."]
    rate = data.get("expected_rate_rps", 0.0)
    if not math.isfinite(rate) or rate < 0:
        problems["expected_rate_rps"] = ["A finite number of requests per second, 0 or more."]
    bound = data["latency_bound_ms"]
    if not math.isfinite(bound) or bound <= 0:
        problems["latency_bound_ms"] = ["A finite number of ms greater than 0."]
    elif fastest is not None and "batch_size" not in problems:
        gpu_type, speed = fastest
        floor = latency.unloaded_floor_ms(speed, data["batch_size"]) * (1.0 + margin)
        if floor > bound:
            problems["latency_bound_ms"] = [
                f"No GPU can meet {bound:g} ms: the fastest, {gpu_type} at {speed:.3g} steps/s, answers a batch of "
                f"{data['batch_size']} in {floor:.3g} ms at the least without any load (with the SLO margin "
                f"{margin:g}); the bound must be at least that."
            ]
    return problems
