"""What telemetry tells the apps above it about the inventory, without knowing them.

telemetry reports node and GPU facts; what those facts mean for jobs is the scheduler's
(scheduler.dispatch.receivers connects to these in SchedulerConfig.ready). Django signals are
sent synchronously, so every receiver runs inside the sender's transaction: a node goes down
and its jobs go back to pending in one commit, or neither happens; an exception in a receiver
undoes the sender's write.
"""
from django.dispatch import Signal

#: Nodes that can no longer run their jobs: they went down (silence, an operator, their agent
#: left) or lost their approval (revoked, claimed by another agent account). Sent once per
#: loss, with node_ids (list[int]) and reason (str).
nodes_lost = Signal()

#: GPUs that failed: what ran on them stopped. Sent once per failure, with gpu_ids (list[int])
#: and reason (str).
gpus_lost = Signal()

#: Capacity offered to the scheduler changed: a node registered (new, changed or back) or was
#: approved.
capacity_changed = Signal()

#: A node's agent reported (registered or heartbeat), with node (its row, as stored now): the
#: scheduler starts profiling campaigns for GPU types the catalog does not know, or whose
#: driver changed (scheduler.profiling).
node_reported = Signal()

#: An existing account is about to be made a node agent (telemetry.services.agent_account_ensure).
#: Sent with user; a receiver that owns a rule against it raises ValidationError saying why.
agent_account_claimed = Signal()
