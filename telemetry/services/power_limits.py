"""What a node's agent reports of its GPUs' power limits (docs/agent.md, "Power limits").

The range and the default come with the registration (nodes.py writes them with the other
reported fields); the limit in force and why the last one asked for was refused come with every
heartbeat, and are written here. A report is all or nothing: a GPU that is not the node's, or
one named twice, refuses the whole report and nothing is stored.
"""
from django.core.exceptions import ValidationError

from .. import live
from ..models import Gpu, Node

#: Reported at registration (the limit in force too, as the agent found it on start).
POWER_LIMIT_RANGE_FIELDS = ["power_limit_min_w", "power_limit_max_w", "power_limit_default_w", "power_limit_w"]
_ERROR_LENGTH = Gpu._meta.get_field("power_limit_error").max_length


def gpu_power_limits_note(*, node: Node, reports: list[dict]) -> list[Gpu]:
    """Store each reported GPU's limit in force and last refusal ("" once a limit is applied);
    the GPUs that changed. Call inside the caller's transaction, after checking who reports."""
    rows = {gpu.uuid: gpu for gpu in Gpu.objects.select_for_update().filter(node=node)}
    errors, seen = {}, set()
    for position, report in enumerate(reports):
        uuid = report["uuid"]
        if uuid not in rows:
            errors[f"gpus[{position}].uuid"] = [f"GPU {uuid} is not a GPU of node {node.hostname}."]
        elif uuid in seen:
            errors[f"gpus[{position}].uuid"] = [f"GPU {uuid} is reported twice."]
        seen.add(uuid)
    if errors:
        raise ValidationError(errors)
    changed = []
    for report in reports:
        row = rows[report["uuid"]]
        limit, error = report.get("power_limit_w"), (report.get("power_limit_error") or "")[:_ERROR_LENGTH]
        if (row.power_limit_w, row.power_limit_error) != (limit, error):
            row.power_limit_w, row.power_limit_error = limit, error
            changed.append(row)
    if changed:
        Gpu.objects.bulk_update(changed, ["power_limit_w", "power_limit_error"])
        live.gpus_changed([row.pk for row in changed])
    return changed
