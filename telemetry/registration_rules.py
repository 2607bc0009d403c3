"""What a node registration must satisfy before the database is asked anything. Pure: no Django.

The API's serializers check the wire format (types, lengths, unknown fields); these are the
rules of the inventory itself, checked by the service so that every caller (API, management
commands, simulated agents) gets them. Errors come back keyed by field path, e.g.
`gpus[2].uuid`, so an agent operator sees which device of the report is wrong.
"""
import re
from collections.abc import Mapping, Sequence

MAX_LABELS = 64
MAX_LABEL_LENGTH = 253
_MAX_KEY_SHOWN = 64

# RFC 1123 host name: dot-separated labels of letters, digits and inner hyphens, 1-63 each,
# 253 in all. Compared lower-cased; a trailing dot (root) is not accepted.
_HOST_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


def normalize_hostname(hostname: str) -> str:
    """Host names are case-insensitive; store one spelling so re-registration finds the node."""
    return hostname.strip().lower()


def hostname_error(hostname: str) -> str | None:
    if not hostname:
        return "A host name is required."
    if len(hostname) > 253:
        return "A host name has at most 253 characters (RFC 1123)."
    if not all(_HOST_LABEL.match(label) for label in hostname.split(".")):
        return (
            f"{hostname!r} is not a valid host name (RFC 1123): dot-separated labels of 1-63 letters, "
            "digits and hyphens, not starting or ending with a hyphen."
        )
    return None


def label_errors(labels) -> list[str]:
    if not isinstance(labels, Mapping):
        return ["Labels must be an object of string keys and string values."]
    if len(labels) > MAX_LABELS:
        return [f"At most {MAX_LABELS} labels."]
    errors = []
    for key, value in labels.items():
        if not isinstance(key, str) or not key or len(key) > MAX_LABEL_LENGTH:
            errors.append(f"Label key {_shown(key)} must be a string of 1-{MAX_LABEL_LENGTH} characters.")
        elif not isinstance(value, str) or len(value) > MAX_LABEL_LENGTH:
            errors.append(f"Label {key!r} must have a string value of at most {MAX_LABEL_LENGTH} characters.")
    return errors


def _shown(key) -> str:
    """A key as an error names it: cut short, as it may be as long as the request."""
    shown = repr(key)
    return shown if len(shown) <= _MAX_KEY_SHOWN else f"{shown[:_MAX_KEY_SHOWN]}…"


def gpu_errors(gpus) -> dict[str, list[str]]:
    """Per-device rules: an index and a uuid each, unique within the report, and a way to know the type."""
    if not isinstance(gpus, Sequence) or isinstance(gpus, (str, bytes)):
        return {"gpus": ["GPUs must be a list of devices."]}
    errors: dict[str, list[str]] = {}
    first_with_index: dict[int, int] = {}
    first_with_uuid: dict[str, int] = {}
    for position, gpu in enumerate(gpus):
        path = f"gpus[{position}]"
        if not isinstance(gpu, Mapping):
            errors[path] = ["Each GPU must be an object."]
            continue
        index, uuid = gpu.get("index"), gpu.get("uuid")
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            errors[f"{path}.index"] = ["The index must be an integer >= 0."]
        elif index in first_with_index:
            errors[f"{path}.index"] = [f"Index {index} is also given by gpus[{first_with_index[index]}]."]
        else:
            first_with_index[index] = position
        if not isinstance(uuid, str) or not uuid.strip():
            errors[f"{path}.uuid"] = ["A uuid is required."]
        elif uuid in first_with_uuid:
            errors[f"{path}.uuid"] = [f"UUID {uuid} is also given by gpus[{first_with_uuid[uuid]}]."]
        else:
            first_with_uuid[uuid] = position
        if not (gpu.get("gpu_type") or gpu.get("product_name")):
            errors[f"{path}.gpu_type"] = ["Give gpu_type (a GPU type name) or product_name (as NVML reports it)."]
        errors.update(power_limit_range_errors(gpu, path))
    return errors


def power_limit_range_errors(gpu: Mapping, path: str) -> dict[str, list[str]]:
    """The allowed range of power limits is a range, and the default lies in it."""
    low, high, default = (gpu.get(f"power_limit_{name}_w") for name in ("min", "max", "default"))
    if low is not None and high is not None and low > high:
        return {f"{path}.power_limit_min_w": [f"The lowest limit ({low:g} W) is above the highest ({high:g} W)."]}
    if default is not None and not ((low is None or low <= default) and (high is None or default <= high)):
        return {f"{path}.power_limit_default_w": [f"The default limit ({default:g} W) is outside the allowed range."]}
    return {}


def registration_errors(*, hostname: str, labels, gpus) -> dict[str, list[str]]:
    """Every rule broken by a registration, keyed by field path; empty when it is acceptable."""
    errors: dict[str, list[str]] = {}
    if problem := hostname_error(hostname):
        errors["hostname"] = [problem]
    if problems := label_errors(labels):
        errors["labels"] = problems
    errors.update(gpu_errors(gpus))
    return errors
