"""GOGH_EXPLORATION_* read from the environment and checked when the settings load (no Django
models: gogh_web/settings.py imports it). A value out of range stops the start with the variable,
the value and what is allowed: a typo that silently switched probing off, or let probes take the
whole cluster, would be found only by its effects (docs/configuration.md)."""
import math
from collections.abc import Mapping

from django.core.exceptions import ImproperlyConfigured

#: The most probes one job may be given: far more than a probe budget needs, well within the
#: Job.probes column (a small integer).
MAX_PROBES_PER_JOB_LIMIT = 1000
_ON, _OFF = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


def exploration_environment(environ: Mapping[str, str]) -> dict:
    """{"enabled", "probe_s", "min_chance", "max_probe_share", "retry_after_s",
    "max_probes_per_job"}, the fields of optimizer.exploration.ExplorationSettings, from
    GOGH_EXPLORATION_ENABLED, _PROBE_S, _MIN_CHANCE, _MAX_PROBE_SHARE, _RETRY_AFTER_S and
    _MAX_PROBES_PER_JOB (unset or empty: the default); ImproperlyConfigured for a bad one."""
    return {
        "enabled": _flag(environ, "GOGH_EXPLORATION_ENABLED", True),
        "probe_s": _number(environ, "GOGH_EXPLORATION_PROBE_S", 600.0, low=1.0, what="at least 1 (seconds)"),
        "min_chance": _number(environ, "GOGH_EXPLORATION_MIN_CHANCE", 0.05, low=0.0, high=1.0,
                              what="a probability from 0 to 1"),
        "max_probe_share": _number(environ, "GOGH_EXPLORATION_MAX_PROBE_SHARE", 0.1, low=0.0, high=1.0,
                                   low_open=True, what="a fraction of the cluster's GPUs, above 0 and at most 1"),
        "retry_after_s": _number(environ, "GOGH_EXPLORATION_RETRY_AFTER_S", 3600.0, low=0.0,
                                 what="at least 0 (seconds)"),
        "max_probes_per_job": int(_number(
            environ, "GOGH_EXPLORATION_MAX_PROBES_PER_JOB", 3, low=0, high=MAX_PROBES_PER_JOB_LIMIT, integer=True,
            what=f"a whole number from 0 (no probes) to {MAX_PROBES_PER_JOB_LIMIT}",
        )),
    }


def _flag(environ: Mapping[str, str], name: str, default: bool) -> bool:
    value = environ.get(name, "").strip().lower()
    if not value:
        return default
    if value not in _ON | _OFF:
        raise ImproperlyConfigured(f"{name}: {value!r} is neither on (1, true, yes, on) nor off (0, false, no, off)")
    return value in _ON


def _number(environ: Mapping[str, str], name: str, default: float, *, low: float, high: float = math.inf,
            low_open: bool = False, integer: bool = False, what: str) -> float:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw) if integer else float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < low or value > high or (low_open and value == low):
        raise ImproperlyConfigured(f"{name}: {raw!r} is not {what}")
    return value
