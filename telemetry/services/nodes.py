"""Writes of the inventory. Only these functions change nodes and GPUs, so the rules of
telemetry.lifecycle and telemetry.registration_rules hold whoever calls (API, admin, Celery
beat, management commands, simulated agents).

Errors: django ValidationError keyed by field path (the API turns it into 400), PermissionDenied
for an account acting on a node that is not its own (403), lifecycle.IllegalTransition for a
state move the rules forbid (the API answers 409).
"""
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from rest_framework.authtoken.models import Token

from gogh_web.activity import announce
from gogh_web.api.permissions import AGENT_PERMISSION

from .. import lifecycle, live, selectors, signals
from ..models import Gpu, GpuState, Node, NodeManager, NodeState, SilenceWatch
from ..product_names import AmbiguousProductName, gpu_type_for_product
from ..registration_rules import normalize_hostname, registration_errors
from .access import check_is_agent, check_may_report
from .admission import admission_at_registration
from .power_limits import POWER_LIMIT_RANGE_FIELDS, gpu_power_limits_note

REASON_LENGTH = 200

_GPU_REPORTED_FIELDS = [
    "node", "index", "gpu_type", "product_name", "pci_bus_id", "pcie_switch", "numa_node", "memory_gb",
    *POWER_LIMIT_RANGE_FIELDS,
]


@transaction.atomic
def node_register(
    *, agent_user, hostname: str, labels: dict, cell: str, agent_version: str, gpus: list[dict],
    driver_version: str = "",
) -> tuple[Node, bool]:
    """Create or update the node `hostname` and its GPUs from its agent's report; (node, created).

    Idempotent: the same report twice leaves the same rows. The report is the truth about the
    node: labels, cell and version are replaced, GPUs are added, updated or marked missing.
    Each GPU: index, uuid, gpu_type (a type name) or product_name (mapped through the types'
    product names), and optionally pci_bus_id, pcie_switch, numa_node, memory_gb and the power
    limits NVML reports (power_limit_min_w, _max_w, _default_w, and the limit in force, _w).
    The registering account becomes the node's agent; a node held by another agent account
    is refused unless the caller is staff (see _check_may_register). A new node waits for an
    operator's approval unless staff registered it or its name is pre-approved (admission.py).
    A node a cluster manager manages (Slurm) is only observed by its agent: its approval and
    state stay the manager's, and its GPUs known from the manager's inventory (placeholder UUIDs)
    take the reported UUIDs by index (_placeholders_adopted). All or nothing.
    """
    check_is_agent(agent_user)
    hostname = normalize_hostname(hostname)
    errors = registration_errors(hostname=hostname, labels=labels, gpus=gpus)
    if errors:
        raise ValidationError(errors)

    node, created = Node.objects.select_for_update().get_or_create(hostname=hostname, defaults={"agent": agent_user})
    if not created:
        _check_may_register(node, agent_user)
    rows = {
        row.uuid: row
        for row in Gpu.objects.select_for_update().filter(Q(node=node) | Q(uuid__in=[gpu["uuid"] for gpu in gpus]))
    }
    gpu_types, errors = _gpu_types_of(gpus)
    errors.update(_uuid_conflicts(node=node, gpus=gpus, rows=rows))
    if errors:
        raise ValidationError(errors)

    now = timezone.now()
    was = None if created else node.state
    observed = node.managed_by != NodeManager.AGENT
    if observed:
        gpu_types = _placeholders_adopted(node=node, gpus=gpus, gpu_types=gpu_types, rows=rows)
    approval_lost = not observed and admission_at_registration(
        node=node, agent_user=agent_user, created=created, now=now
    )
    node.labels, node.cell, node.agent_version = dict(labels), cell, agent_version
    node.driver_version = driver_version
    node.agent = agent_user
    node.last_heartbeat = now
    _note_report(node)
    node.save()
    _gpus_sync(node=node, gpus=gpus, gpu_types=gpu_types, rows=rows, now=now)
    if approval_lost:
        signals.nodes_lost.send(
            sender=Node, node_ids=[node.pk], reason=f"claimed by agent account {agent_user.get_username()}"
        )
    live.node_changed(node.pk)
    live.gpus_changed([*Gpu.objects.filter(node=node).values_list("pk", flat=True), *(row.pk for row in rows.values())])
    signals.capacity_changed.send(sender=Node)  # new or changed capacity
    signals.node_reported.send(sender=Node, node=node)
    _announce_registration(node, gpu_types, was=was)
    return node, created


def _announce_registration(node: Node, gpu_types: list, *, was: str | None) -> None:
    """One activity line: the node, its GPUs, its state (and the one it left) and whether it
    may receive jobs. `was`: its state before (None: a new node)."""
    counts: dict[str, int] = {}
    for gpu_type in gpu_types:
        counts[gpu_type.name] = counts.get(gpu_type.name, 0) + 1
    gpus = ", ".join(f"{count} {name}" for name, count in sorted(counts.items())) or "no GPUs"
    again = "registered" if was is None else "registered again"
    if was not in (None, node.state):
        again += f" (was {was})"
    admitted = "approved" if node.approved_at else "waiting for an operator's approval"
    announce("node %s %s: %s, cell %s, %s, %s", node.hostname, again, gpus, node.cell or "-", node.state, admitted)


@transaction.atomic
def node_heartbeat(*, node: Node, agent_user, driver_version: str | None = None,
                   power_limits: list[dict] | None = None) -> Node:
    """Record that the node's agent is alive; a down node comes back (ready, or draining if an
    operator drained it). `driver_version`: the GPU driver, as its agent reports it (None: not
    reported, kept as it was). `power_limits`: each GPU's limit in force and last refusal
    (power_limits.gpu_power_limits_note; None: not reported, kept as they were)."""
    node = Node.objects.select_for_update().get(pk=node.pk)
    check_may_report(node, agent_user)
    if power_limits is not None:
        gpu_power_limits_note(node=node, reports=power_limits)
    was = node.state
    node.last_heartbeat = timezone.now()
    if driver_version is not None:
        node.driver_version = driver_version
    _note_report(node)
    node.save(update_fields=["last_heartbeat", "state", "state_reason", "driver_version", "updated_at"])
    signals.node_reported.send(sender=Node, node=node)
    if node.state != was:  # pages show the state, not the heartbeat time
        live.node_changed(node.pk)
        announce("node %s up (%s): its agent is heard again", node.hostname, node.state)
    return node


@transaction.atomic
def node_set_state(*, node: Node, state: str, reason: str = "") -> Node:
    """An operator's move: drain (draining), undrain (ready) or mark down (down).

    Draining sets Node.drained and undraining clears it: the drain outlives the node going
    down and coming back (lifecycle.node_state_after_report). Marking down leaves it as it is.
    Setting the state a node already has only updates the reason.
    """
    node = Node.objects.select_for_update().get(pk=node.pk)
    lifecycle.check_node_operator_move(node.state, state)
    if state == NodeState.DOWN and node.state != NodeState.DOWN:
        nodes_go_down(node_ids=[node.pk], reason=reason)
        node.refresh_from_db()
        return node
    was = node.state
    node.state, node.state_reason = state, _clip(reason)
    if state != NodeState.DOWN:
        node.drained = state == NodeState.DRAINING
    node.save(update_fields=["state", "state_reason", "drained", "updated_at"])
    live.node_changed(node.pk)
    if state == NodeState.READY and was != NodeState.READY:
        signals.capacity_changed.send(sender=Node)  # undrained: its GPUs take work again, now
    if state != was:
        said = f": {node.state_reason}" if node.state_reason else ""
        announce("node %s %s by an operator%s", node.hostname, "drained" if node.drained else "undrained", said)
    return node


@transaction.atomic
def nodes_mark_silent_down(*, timeout_s: float, now=None, check_every_s: float | None = None) -> int:
    """Nodes (ready or draining) not heard from for `timeout_s` seconds go down; how many did.

    A node that never heartbeated counts as silent. Run periodically by Celery beat, every
    `check_every_s` (default GOGH_NODE_SILENCE_CHECK_S). Not while the control plane presumes
    that it was away itself (it heard none of its nodes, or this detector did not run), nor
    before it has heard again for one full timeout (lifecycle.hearing_after_check): a web or
    database outage longer than the timeout must not mark every node down.
    Nodes a cluster manager manages (Slurm) are left alone: their liveness is the manager's
    (services.executor_inventory), and an observer agent's silence only stops their samples.
    """
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=timeout_s)
    watched = Node.objects.select_for_update().filter(
        state__in=lifecycle.NODE_STATES_WATCHED, managed_by=NodeManager.AGENT
    )
    silent = watched.filter(Q(last_heartbeat__lt=cutoff) | Q(last_heartbeat__isnull=True))
    silent_ids = list(silent.values_list("pk", flat=True))
    watched_count = watched.count()
    hearing = _hearing_after_check(
        now=now, timeout_s=timeout_s, heard_nobody=watched_count >= 2 and len(silent_ids) == watched_count,
        check_every_s=settings.GOGH_NODE_SILENCE_CHECK_S if check_every_s is None else check_every_s,
    )
    if not lifecycle.silence_may_be_declared(hearing, now=now, timeout_s=timeout_s):
        return 0
    return nodes_go_down(node_ids=silent_ids, reason=f"no heartbeat for {timeout_s:g} s")


def _hearing_after_check(*, now, timeout_s: float, check_every_s: float, heard_nobody: bool) -> lifecycle.Hearing:
    """Update the detector's memory (the one SilenceWatch row, locked) after a run at `now`."""
    watch = SilenceWatch.objects.select_for_update().order_by("pk").first() or SilenceWatch.objects.create()
    previous = lifecycle.Hearing(checked_at=watch.checked_at, deaf=watch.deaf, hearing_since=watch.hearing_since)
    hearing = lifecycle.hearing_after_check(
        previous, now=now, timeout_s=timeout_s, check_every_s=check_every_s, heard_nobody=heard_nobody
    )
    watch.checked_at, watch.deaf, watch.hearing_since = hearing.checked_at, hearing.deaf, hearing.hearing_since
    watch.save()
    return hearing


@transaction.atomic
def node_leave(*, node: Node, agent_user) -> Node:
    """The node's agent is shutting down (SIGTERM): the node goes down now and its jobs go
    back to pending, rather than after the heartbeat timeout. Its next report brings it back.
    A node a cluster manager manages stays as it is: its agent only observed it, and its jobs
    are the manager's to run."""
    node = Node.objects.select_for_update().get(pk=node.pk)
    check_may_report(node, agent_user)
    if node.managed_by != NodeManager.AGENT:
        return node
    nodes_go_down(node_ids=[node.pk], reason=f"agent left ({agent_user.get_username()})")
    node.refresh_from_db()
    return node


@transaction.atomic
def node_leaving(*, node: Node, agent_user) -> Node:
    """The node's agent is about to stop its jobs and leave: the node takes no new work from
    now on (draining, as Kubernetes cordons a node before a graceful shutdown), so that no round
    places a job there between a job's stop report and the leave. Its running jobs stay where
    they are until they report their stop. Not an operator's drain (Node.drained stays as it
    is): the node comes back ready when its agent reports again. A node a cluster manager
    manages, or one not ready, stays as it is."""
    node = Node.objects.select_for_update().get(pk=node.pk)
    check_may_report(node, agent_user)
    if node.managed_by != NodeManager.AGENT or node.state != NodeState.READY:
        return node
    node.state, node.state_reason = NodeState.DRAINING, _clip(f"its agent is leaving ({agent_user.get_username()})")
    node.save(update_fields=["state", "state_reason", "updated_at"])
    live.node_changed(node.pk)
    announce("node %s draining: its agent is stopping its jobs to leave", node.hostname)
    return node


@transaction.atomic
def gpu_set_state(*, gpu: Gpu, state: str, reason: str = "") -> Gpu:
    """An operator's move on one GPU: disable, mark failed, or make healthy again."""
    gpu = Gpu.objects.select_for_update().get(pk=gpu.pk)
    lifecycle.check_gpu_operator_move(gpu.state, state)
    gpu.state, gpu.state_reason = state, _clip(reason)
    gpu.save(update_fields=["state", "state_reason"])
    live.gpus_changed([gpu.pk])
    return gpu


@transaction.atomic
def agent_account_ensure(*, username: str):
    """The agent account `username`, created without a password if missing, holding the agent
    permission. Agents sign in with a token, never a password.

    An existing account is only ever returned, never made an agent: it must already be one
    (the agent permission, directly or through a group; active; no tenant; not staff or
    superuser; no usable password), else ValidationError says what it is. Granting the
    permission to whatever account bore the name turned a tenant's API-only or SSO user into
    an agent that kept its tenant's jobs, and a revoked agent back into one."""
    user, created = get_user_model().objects.get_or_create(username=username)
    app_label, codename = AGENT_PERMISSION.split(".")
    permission = Permission.objects.get(content_type__app_label=app_label, codename=codename)
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
        user.user_permissions.add(permission)
        return user
    if user.is_staff or user.is_superuser or user.has_usable_password():
        raise ValidationError(
            f"{username!r} is a person's account (staff, superuser or with a password); "
            "agents get accounts of their own"
        )
    signals.agent_account_claimed.send(sender=Node, user=user)  # e.g. refused: a tenant's account
    if not Permission.objects.filter(Q(user=user) | Q(group__user=user), pk=permission.pk).exists():
        raise ValidationError(
            f"{username!r} is an existing account without the agent permission ({AGENT_PERMISSION}); agents get "
            "accounts of their own (or an operator grants it in the admin)"
        )
    if not user.is_active:
        raise ValidationError(f"{username!r} is deactivated; an operator reactivates it in the admin first")
    return user


def agent_token_ensure(*, username: str) -> str:
    """The API token of agent account `username` (account and token made if missing)."""
    user = agent_account_ensure(username=username)
    return Token.objects.get_or_create(user=user)[0].key


def nodes_go_down(*, node_ids: list[int], reason: str) -> int:
    """The one place where nodes go down, for the silence detector, operators, agents that
    leave and a cluster manager's inventory (executor_inventory). Their placed and running jobs
    go back to pending in the same transaction (signals.nodes_lost, received by
    scheduler.dispatch), so a node is never down while the scheduler believes work runs on it.
    Nodes already down are left alone, which keeps the requeue to exactly once."""
    hostnames = dict(
        Node.objects.filter(pk__in=node_ids).exclude(state=NodeState.DOWN).order_by("hostname")
        .values_list("pk", "hostname")
    )
    going = list(hostnames)
    count = Node.objects.filter(pk__in=going).update(
        state=NodeState.DOWN, state_reason=_clip(reason), updated_at=timezone.now()
    )
    for node_id in going:
        live.node_changed(node_id)
        announce("node %s down: %s", hostnames[node_id], reason)
    signals.nodes_lost.send(sender=Node, node_ids=going, reason=reason)
    return count


def _note_report(node: Node) -> None:
    """Apply what an agent's report means for the node's state (down -> ready, or draining).
    Nothing for a node a cluster manager manages: its agent only observes, and whether the node
    is up is the manager's to say."""
    if node.managed_by != NodeManager.AGENT:
        return
    state = lifecycle.node_state_after_report(node.state, drained=node.drained)
    if state != node.state:
        node.state, node.state_reason = state, ""


def _check_may_register(node: Node, user) -> None:
    """A node belongs to the agent account that registered it; another agent account may not
    take it over, or one leaked agent token could hijack every node. Staff may, and a node
    without an agent (an operator cleared it, or the account was deleted) is free to claim:
    that is how an agent's credentials are rotated."""
    if not (user.is_staff or node.agent_id is None or node.agent_id == user.pk):
        raise PermissionDenied(
            f"Node {node.hostname} is registered by another agent account; an operator must release it "
            "(clear its agent) before this account can register it."
        )


def _gpu_types_of(gpus: list[dict]) -> tuple[list, dict[str, list[str]]]:
    """The GpuType of each reported GPU (None where unknown) and the errors, by field path."""
    known = selectors.gpu_types_by_name()
    patterns = [
        (name, gpu_type.product_names if isinstance(gpu_type.product_names, list) else [])
        for name, gpu_type in known.items()
    ]
    resolved, errors = [], {}
    for position, gpu in enumerate(gpus):
        name = (gpu.get("gpu_type") or "").strip().lower()
        product = gpu.get("product_name") or ""
        if name and name not in known:
            names = ", ".join(sorted(known)) or "none yet (run manage.py load_reference_catalog)"
            errors[f"gpus[{position}].gpu_type"] = [f"Unknown GPU type {name!r}; known types: {names}."]
        elif not name:
            try:
                name = gpu_type_for_product(product, patterns)
            except AmbiguousProductName as exc:
                errors[f"gpus[{position}].product_name"] = [str(exc)]
            else:
                if name is None:
                    errors[f"gpus[{position}].product_name"] = [
                        f"No GPU type's product names match {product!r}; send gpu_type, or add a product "
                        "name to the GPU type (admin or API)."
                    ]
        resolved.append(known.get(name) if name else None)
    return resolved, errors


def _uuid_conflicts(*, node: Node, gpus: list[dict], rows: dict[str, Gpu]) -> dict[str, list[str]]:
    """A device present on another node cannot be reported here. A missing one can: the card
    was moved, and its row (with its allocation history) moves along."""
    errors = {}
    for position, gpu in enumerate(gpus):
        row = rows.get(gpu["uuid"])
        if row is not None and row.node_id != node.pk and row.state != GpuState.MISSING:
            errors[f"gpus[{position}].uuid"] = [f"GPU {row.uuid} is registered on node {row.node.hostname}."]
    return errors


def placeholder_uuid(manager: str, hostname: str, index: int) -> str:
    """The UUID of a GPU known only from a cluster manager's inventory, until an agent reports the real one."""
    return f"{manager}:{hostname}:{index}"


def _placeholders_adopted(*, node: Node, gpus: list[dict], gpu_types: list, rows: dict[str, Gpu]) -> list:
    """On a node a cluster manager manages, the rows its inventory made (placeholder_uuid)
    take the UUIDs the observer reports at their indexes, re-keyed in `rows` (not saved:
    _gpus_sync writes them), so their allocation history stays one row per device. A reported
    GPU keeps the type the manager's inventory gave its row: the manager schedules by that
    type. The GPU types to write, in the report's order."""
    by_index = {row.index: row for row in rows.values() if row.node_id == node.pk and row.state != GpuState.MISSING}
    types = list(gpu_types)
    for position, gpu in enumerate(gpus):
        row = rows.get(gpu["uuid"]) or by_index.get(gpu["index"])
        if row is None or row.node_id != node.pk:
            continue
        if row.uuid != gpu["uuid"] and row.uuid == placeholder_uuid(node.managed_by, node.hostname, row.index):
            del rows[row.uuid]
            row.uuid = gpu["uuid"]
            rows[row.uuid] = row
        if row.uuid == gpu["uuid"]:
            types[position] = row.gpu_type
    return types


def _gpus_sync(*, node: Node, gpus: list[dict], gpu_types: list, rows: dict[str, Gpu], now) -> None:
    """Make the GPU rows match the report.

    Reported GPUs are created or updated (a missing one becomes healthy; failed and disabled
    stay, as they are operator or health decisions). Rows of this node the report lacks become
    missing, never deleted: allocations refer to them. All existing rows are first parked as
    missing, outside the (node, index) uniqueness, so indexes may move in any order, swaps
    included; the final write restores each row's state.
    """
    Gpu.objects.filter(pk__in=[row.pk for row in rows.values()]).update(state=GpuState.MISSING)
    reported = {gpu["uuid"] for gpu in gpus}
    to_update, to_create = [], []
    for gpu, gpu_type in zip(gpus, gpu_types):
        row = rows.get(gpu["uuid"])
        if row is None:
            row = Gpu(uuid=gpu["uuid"])
            to_create.append(row)
        else:
            to_update.append(row)
            if row.state == GpuState.MISSING:
                row.state, row.state_reason = GpuState.HEALTHY, ""
        row.node, row.index, row.gpu_type = node, gpu["index"], gpu_type
        row.product_name = gpu.get("product_name") or ""
        row.pci_bus_id = gpu.get("pci_bus_id") or ""
        row.pcie_switch = gpu.get("pcie_switch") or ""
        row.numa_node = gpu.get("numa_node")
        row.memory_gb = gpu.get("memory_gb")
        for field in POWER_LIMIT_RANGE_FIELDS:
            setattr(row, field, gpu.get(field))
    for row in rows.values():
        if row.uuid not in reported and row.state != GpuState.MISSING:
            was = f"{row.state}: {row.state_reason}" if row.state_reason else row.state
            row.state = GpuState.MISSING
            row.state_reason = _clip(f"Not reported at registration on {now:%Y-%m-%d %H:%M:%S} UTC (was {was}).")
            to_update.append(row)
    Gpu.objects.bulk_update(to_update, ["uuid", *_GPU_REPORTED_FIELDS, "state", "state_reason"])
    Gpu.objects.bulk_create(to_create)


def _clip(reason: str) -> str:
    """Reasons are for people; one that does not fit the column is cut rather than refused."""
    return reason[:REASON_LENGTH]
