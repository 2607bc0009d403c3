"""What the inventory's news means for jobs: telemetry sends its signals (telemetry.signals)
without knowing who listens; these receivers, connected by SchedulerConfig.ready, act on them.
Signals are synchronous, so each runs inside the sender's transaction: a node goes down and
its jobs are requeued in one commit, exactly once (a node already down sends nothing)."""
from django.core.exceptions import ValidationError

from telemetry import signals

from ..models import Membership, SolveTrigger
from ..services import scheduling_round_request
from .requeue import jobs_requeue_from_gpus, jobs_requeue_from_nodes


def connect() -> None:
    signals.nodes_lost.connect(_nodes_lost, dispatch_uid="dispatch-nodes-lost")
    signals.gpus_lost.connect(_gpus_lost, dispatch_uid="dispatch-gpus-lost")
    signals.capacity_changed.connect(_capacity_changed, dispatch_uid="dispatch-capacity-changed")
    signals.agent_account_claimed.connect(_agent_account_claimed, dispatch_uid="dispatch-agent-account-claimed")


def _nodes_lost(sender, *, node_ids: list[int], reason: str, **kwargs) -> None:
    jobs_requeue_from_nodes(node_ids=node_ids, reason=reason)


def _gpus_lost(sender, *, gpu_ids: list[int], reason: str, **kwargs) -> None:
    jobs_requeue_from_gpus(gpu_ids=gpu_ids, reason=reason)


def _capacity_changed(sender, **kwargs) -> None:
    scheduling_round_request(trigger=SolveTrigger.NODE)


def _agent_account_claimed(sender, *, user, **kwargs) -> None:
    """A tenant's account (an API-only or SSO user) never becomes an agent: it would keep its
    tenant's jobs and read other tenants' assignments."""
    membership = Membership.objects.filter(user=user).select_related("tenant").first()
    if membership:
        raise ValidationError(
            f"{user.get_username()!r} is an account of tenant {membership.tenant.slug!r}; agents get accounts of "
            "their own"
        )
