"""Settings inputs read from the environment, with defaults that work on one machine.

Kept apart from settings.py so the rules (what counts as true, where var/ is, how the secret
key is made once) are testable on their own.
"""
import math
import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

TRUE_WORDS = {"1", "true", "yes", "on"}


def flag(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in TRUE_WORDS


def var_dir() -> Path:
    """Where the embedded defaults keep their state (SQLite file, broker folders, secret key)."""
    path = Path(os.environ.get("GOGH_VAR_DIR", BASE_DIR / "var")).resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


def secret_key(var: Path) -> str:
    """DJANGO_SECRET_KEY if given, else a key generated once into var/secret_key (mode 0600)."""
    given = os.environ.get("DJANGO_SECRET_KEY")
    if given:
        return given
    path = var / "secret_key"
    if not path.exists():
        # Written whole under a private name, then linked into place: processes started
        # together (daphne, worker, beat) all end up reading the one key that won.
        tmp = var / f".secret_key.{os.getpid()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(50))
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    return path.read_text().strip()


def csv_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]

#: The most probes one job may be given: far more than a probe budget needs, well within the
#: Job.probes column (a small integer).
MAX_PROBES_PER_JOB_LIMIT = 1000
FALSE_WORDS = {"0", "false", "no", "off"}


def exploration_environment(environ: Mapping[str, str]) -> dict:
    """GOGH_EXPLORATION_* (docs/exploration.md), checked when the settings load: a value out of
    range stops the start with the variable, the value and what is allowed, since a typo that
    silently switched probing off, or let probes take the whole cluster, would be found only by
    its effects. {"enabled", "probe_s", "min_chance", "max_probe_share", "retry_after_s",
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
    if value not in TRUE_WORDS | FALSE_WORDS:
        raise ImproperlyConfigured(f"{name}: {value!r} is neither on (1, true, yes, on) nor off (0, false, no, off)")
    return value in TRUE_WORDS


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


EXECUTORS = ("agent", "slurm")


def executor_environment(environ: Mapping[str, str], var: Path) -> dict:
    """GOGH_EXECUTOR and GOGH_SLURM_* (docs/executors.md), checked when the settings load: an
    unknown executor, a malformed map or a bad number stops the start with the variable, the
    value and what is allowed. {"executor", "slurm": {"gres_types", "accounts", "partition",
    "sync_s", "command_timeout_s", "pending_timeout_s", "output_dir", "checkpoint_dir", "job_prefix", "bin_dir"}}."""
    executor = environ.get("GOGH_EXECUTOR", "").strip().lower() or "agent"
    if executor not in EXECUTORS:
        raise ImproperlyConfigured(f"GOGH_EXECUTOR: {executor!r} is not one of {', '.join(EXECUTORS)}")
    prefix = environ.get("GOGH_SLURM_JOB_PREFIX", "").strip() or "gogh"
    if not prefix.replace("-", "").replace("_", "").isalnum():
        raise ImproperlyConfigured(f"GOGH_SLURM_JOB_PREFIX: {prefix!r} is not letters, digits, '-' and '_'")
    return {
        "executor": executor,
        "slurm": {
            "gres_types": _pairs(environ, "GOGH_SLURM_GRES_TYPES", what="gres type=GPU type"),
            "accounts": _pairs(environ, "GOGH_SLURM_ACCOUNTS", what="tenant slug=Slurm account"),
            "partition": environ.get("GOGH_SLURM_PARTITION", "").strip(),
            "sync_s": _number(environ, "GOGH_SLURM_SYNC_S", 2.0, low=0.5, high=3600, what="0.5 to 3600 (seconds)"),
            "command_timeout_s": _number(environ, "GOGH_SLURM_COMMAND_TIMEOUT_S", 15.0, low=1, high=600,
                                         what="1 to 600 (seconds)"),
            "pending_timeout_s": _number(environ, "GOGH_SLURM_PENDING_TIMEOUT_S", 300.0, low=10, high=7 * 86400,
                                         what="10 to 604800 (seconds)"),
            "output_dir": Path(environ.get("GOGH_SLURM_OUTPUT_DIR", "").strip() or var / "slurm" / "output"),
            "checkpoint_dir": Path(
                environ.get("GOGH_SLURM_CHECKPOINT_DIR", "").strip() or var / "slurm" / "checkpoints"
            ),
            "job_prefix": prefix,
            "bin_dir": environ.get("GOGH_SLURM_BIN_DIR", "").strip(),
        },
    }


def _pairs(environ: Mapping[str, str], name: str, *, what: str) -> dict[str, str]:
    """"a=b,c=d" -> {"a": "b", "c": "d"}; ImproperlyConfigured naming the item that is not one."""
    pairs = {}
    for item in (part.strip() for part in environ.get(name, "").split(",")):
        if not item:
            continue
        key, equals, value = (side.strip() for side in item.partition("="))
        if not equals or not key or not value:
            raise ImproperlyConfigured(f"{name}: {item!r} is not {what}")
        pairs[key] = value
    return pairs
