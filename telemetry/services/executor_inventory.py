"""The inventory of a cluster manager GOGH runs its jobs through (Slurm), applied to nodes and GPUs.

On such a cluster the manager, not a GOGH agent, says which nodes exist, what GPUs they hold
and whether they are up; its agents, where they run, only observe (docs/agent.md). The
scheduler's executor sync reads the manager (scheduler.dispatch) and hands the result here as
plain data, so telemetry stays below the scheduler: a node the manager reports down goes down
through the same path as a silent one (nodes.nodes_go_down: its jobs back to pending, once),
and GPUs held by runs GOGH did not submit are marked (Gpu.external_holder), so that the
optimiser plans nothing on them (scheduler.problem_source).
"""
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from gogh_web.activity import announce

from .. import lifecycle, live, selectors, signals
from ..models import Gpu, GpuState, Node, NodeManager, NodeState
from ..registration_rules import hostname_error, normalize_hostname
from .nodes import REASON_LENGTH, nodes_go_down, placeholder_uuid

GONE_REASON = "no longer in {manager}'s inventory"
HOLDER_LENGTH = Gpu._meta.get_field("external_holder").max_length


@transaction.atomic
def executor_inventory_apply(
    *, manager: str, nodes: list[dict], holders: dict[tuple[str, int], str], now=None
) -> dict:
    """Make the nodes of cluster manager `manager` (a NodeManager other than agent) match its
    inventory; counts {"nodes": nodes in the inventory, "down": nodes that went down now,
    "up": nodes that came back now, "held": GPUs a foreign run holds now}.

    `nodes`: {"name", "up": bool, "reason": str (why it is not up), "gpus": {GPU type name:
    count}}, the GPUs indexed 0..n-1 in the order of their type names. `holders`: (host name,
    GPU index) -> who holds that GPU (a run GOGH did not submit); a key naming a GPU the
    inventory does not hold is ignored (e.g. a node whose gres type could not be mapped).

    The manager's nodes are the operator's: created or taken over approved (approved_by None).
    A node an agent registered under the same name is taken over, its GPUs (real UUIDs) kept
    by index; a new GPU gets the placeholder UUID "<manager>:<node>:<index>" until an observer
    agent registers the node (nodes.node_register adopts it). GPUs beyond the count become
    missing. A node down in the inventory, or absent from it, goes down (nodes_lost, once);
    one back up becomes ready (draining if an operator drained it) with capacity_changed.
    All or nothing: an unknown GPU type or host name writes nothing. Idempotent: the same
    inventory twice writes and sends nothing the second time.
    """
    now = now or timezone.now()
    manager_label = _manager_label(manager)
    inventory, gpu_types = _checked(nodes)
    rows = {
        node.hostname: node
        for node in Node.objects.select_for_update().filter(Q(hostname__in=inventory) | Q(managed_by=manager))
    }
    changed_nodes: set[int] = set()
    changed_gpus: set[int] = set()
    gone_down: list[tuple[int, str]] = []
    came_up = 0
    capacity = False
    for hostname, entry in inventory.items():
        node = rows.get(hostname)
        node, new = _node_taken(node, hostname=hostname, manager=manager, manager_label=manager_label, now=now)
        if new:
            changed_nodes.add(node.pk)
            capacity = True
        if entry["up"] and node.state == NodeState.DOWN:
            node.state, node.state_reason = lifecycle.node_state_after_report(node.state, drained=node.drained), ""
            node.save(update_fields=["state", "state_reason", "updated_at"])
            changed_nodes.add(node.pk)
            came_up += 1
            capacity = True
            announce("node %s up (%s): %s reports it up", hostname, node.state, manager_label)
        elif not entry["up"]:
            reason = _clip(f"{manager_label}: {entry['reason'] or 'not up'}")
            if node.state != NodeState.DOWN:
                gone_down.append((node.pk, reason))
            elif node.state_reason != reason:
                node.state_reason = reason
                node.save(update_fields=["state_reason", "updated_at"])
                changed_nodes.add(node.pk)
        gpus_changed = _gpus_match(node, entry["gpus"], gpu_types, manager=manager, now=now)
        changed_gpus |= gpus_changed
        capacity = capacity or bool(gpus_changed)
    gone = GONE_REASON.format(manager=manager_label)
    gone_down += [
        (node.pk, gone) for hostname, node in rows.items() if hostname not in inventory and node.state != NodeState.DOWN
    ]
    down = sum(nodes_go_down(node_ids=[pk], reason=reason) for pk, reason in gone_down)
    held_changed, held = _holders_match(manager, holders)
    changed_gpus |= held_changed
    for node_id in changed_nodes:
        live.node_changed(node_id)
    if changed_gpus:
        live.gpus_changed(sorted(changed_gpus))
    if capacity or held_changed:
        signals.capacity_changed.send(sender=Node)
    return {"nodes": len(inventory), "down": down, "up": came_up, "held": held}


def _manager_label(manager: str) -> str:
    """The manager's name for people ("Slurm"); ValidationError for one that is not a manager."""
    if manager == NodeManager.AGENT or manager not in NodeManager.values:
        managers = ", ".join(m for m in NodeManager.values if m != NodeManager.AGENT)
        raise ValidationError({"manager": [f"Unknown cluster manager {manager!r}; known: {managers}."]})
    return NodeManager(manager).label


def _checked(nodes: list[dict]) -> tuple[dict[str, dict], dict]:
    """The inventory by normalised host name and the GPU types it names, or ValidationError
    naming every culprit (by field path) before anything is written."""
    known = selectors.gpu_types_by_name()
    inventory, errors = {}, {}
    for position, entry in enumerate(nodes):
        hostname = normalize_hostname(entry["name"])
        if problem := hostname_error(hostname):
            errors[f"nodes[{position}].name"] = [problem]
        elif hostname in inventory:
            errors[f"nodes[{position}].name"] = [f"Node {hostname} is listed twice."]
        for name, count in entry["gpus"].items():
            if name not in known:
                names = ", ".join(sorted(known)) or "none yet"
                errors[f"nodes[{position}].gpus"] = [f"Unknown GPU type {name!r}; known types: {names}."]
            elif not isinstance(count, int) or count < 0:
                errors[f"nodes[{position}].gpus"] = [f"GPU count of {name!r} must be an integer >= 0, not {count!r}."]
        inventory[hostname] = entry
    if errors:
        raise ValidationError(errors)
    return inventory, known


def _node_taken(node: Node | None, *, hostname: str, manager: str, manager_label: str, now) -> tuple[Node, bool]:
    """The manager's node `hostname`, created or taken over (approved); (node, whether it was
    created, taken over or approved now: new capacity)."""
    if node is None:
        node = Node.objects.create(hostname=hostname, managed_by=manager, approved_at=now)
        announce("node %s added from %s's inventory", hostname, manager_label)
        return node, True
    if node.managed_by == manager and node.approved_at is not None:
        return node, False
    if node.managed_by != manager:
        announce("node %s taken over by %s (was %s)", hostname, manager_label, node.get_managed_by_display())
    node.managed_by = manager
    if node.approved_at is None:
        node.approved_at, node.approved_by = now, None
    node.save(update_fields=["managed_by", "approved_at", "approved_by", "updated_at"])
    return node, True


def _gpus_match(node: Node, counts: dict[str, int], gpu_types: dict, *, manager: str, now) -> set[int]:
    """Make `node`'s GPUs match `counts`: index i is kept (its UUID, real or placeholder), or the
    placeholder of index i comes back, or is created; indexes beyond become missing (failed
    and disabled stay, as at registration). The ids of the rows changed."""
    wanted = [gpu_types[name] for name in sorted(counts) for _ in range(counts[name])]
    rows = list(Gpu.objects.select_for_update().filter(node=node))
    present = {row.index: row for row in rows if row.state != GpuState.MISSING}
    placeholders = {row.uuid: row for row in rows}
    changed = set()
    for index, gpu_type in enumerate(wanted):
        row = present.get(index) or placeholders.get(placeholder_uuid(manager, node.hostname, index))
        if row is None:
            row = Gpu.objects.create(node=node, index=index, uuid=placeholder_uuid(manager, node.hostname, index),
                                     gpu_type=gpu_type)
            changed.add(row.pk)
            continue
        if row.state == GpuState.MISSING:
            row.state, row.state_reason, row.index = GpuState.HEALTHY, "", index
        elif row.gpu_type_id == gpu_type.pk:
            continue
        row.gpu_type = gpu_type
        row.save(update_fields=["gpu_type", "state", "state_reason", "index"])
        changed.add(row.pk)
    for index, row in present.items():
        if index >= len(wanted):
            was = f"{row.state}: {row.state_reason}" if row.state_reason else row.state
            row.state = GpuState.MISSING
            row.state_reason = _clip(
                f"Not in {node.get_managed_by_display()}'s inventory on {now:%Y-%m-%d %H:%M:%S} UTC (was {was})."
            )
            row.external_holder = ""
            row.save(update_fields=["state", "state_reason", "external_holder"])
            changed.add(row.pk)
    return changed


def _holders_match(manager: str, holders: dict[tuple[str, int], str]) -> tuple[set[int], int]:
    """Set each of the manager's present GPUs' external_holder from `holders`, clear the others;
    (ids of the rows changed, GPUs held now)."""
    wanted = {(normalize_hostname(host), index): holder[:HOLDER_LENGTH] for (host, index), holder in holders.items()}
    changed, held = set(), 0
    gpus = Gpu.objects.select_for_update().filter(node__managed_by=manager).exclude(state=GpuState.MISSING)
    for gpu in gpus.select_related("node"):
        holder = wanted.get((gpu.node.hostname, gpu.index), "")
        held += bool(holder)
        if gpu.external_holder != holder:
            gpu.external_holder = holder
            gpu.save(update_fields=["external_holder"])
            changed.add(gpu.pk)
    return changed, held


def _clip(reason: str) -> str:
    return reason[:REASON_LENGTH]
