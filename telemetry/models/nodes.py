"""Nodes: machines with GPUs, registered by their agents and kept alive by heartbeats."""
from django.conf import settings
from django.db import models


class NodeState(models.TextChoices):
    READY = "ready", "Ready"
    DRAINING = "draining", "Draining"
    DOWN = "down", "Down"


class NodeManager(models.TextChoices):
    """Who tells the control plane what the node holds and whether it is up: its GOGH agent
    (registration and heartbeats), or the cluster manager GOGH runs its jobs through (Slurm's
    inventory, synced; its agent, if any, only observes)."""

    AGENT = "agent", "GOGH agent"
    SLURM = "slurm", "Slurm"


class Node(models.Model):
    hostname = models.CharField(max_length=253, unique=True)
    labels = models.JSONField(default=dict, blank=True, help_text="Free-form key/value labels.")
    cell = models.CharField(
        max_length=64, blank=True, db_index=True, help_text="Scheduling cell for hierarchical solving."
    )
    state = models.CharField(max_length=16, choices=NodeState.choices, default=NodeState.READY, db_index=True)
    managed_by = models.CharField(
        max_length=16, choices=NodeManager.choices, default=NodeManager.AGENT,
        help_text="Who reports its inventory and state: its agent, or Slurm (then agents only observe).",
    )
    state_reason = models.CharField(max_length=200, blank=True)
    drained = models.BooleanField(
        default=False,
        help_text="An operator drained this node: it takes no new jobs, and stays drained across down and back.",
    )
    approved_at = models.DateTimeField(
        null=True, blank=True, help_text="When an operator admitted this node; until then it receives no jobs."
    )
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The operator who admitted this node.",
    )
    agent = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="nodes",
        help_text="The agent account that registered this node; only it may report for it.",
    )
    agent_version = models.CharField(max_length=40, blank=True)
    driver_version = models.CharField(
        max_length=40, blank=True,
        help_text="The GPU driver the agent last reported (NVML); a change re-profiles its GPU types.",
    )
    samples_dropped = models.BigIntegerField(
        default=0, help_text="Samples the agent dropped from its full buffer since it started, as it last reported."
    )
    last_heartbeat = models.DateTimeField(null=True, blank=True, db_index=True)
    registered_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["hostname"]
        permissions = [("act_as_agent", "Can register nodes and report telemetry as a node agent")]

    def __str__(self):
        return self.hostname
