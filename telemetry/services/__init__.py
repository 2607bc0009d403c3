"""Every write of the telemetry app goes through these functions (keyword-only, atomic):
the inventory (nodes.py), GPUs that die (gpu_failures.py), the requeue of jobs on down nodes
and failed GPUs (requeue.py), GPU samples
(samples.py) and agents' job reports (job_progress.py). Who may report for what: access.py."""
from .gpu_failures import gpus_report_failed
from .job_progress import NotAssigned, job_progress_report
from .nodes import (
    agent_account_ensure,
    agent_token_ensure,
    gpu_set_state,
    node_heartbeat,
    node_leave,
    node_register,
    node_set_state,
    nodes_mark_silent_down,
)
from .requeue import jobs_requeue_from_gpus, jobs_requeue_from_nodes
from .samples import gpu_sample_minutes_prune, gpu_samples_downsample, gpu_samples_ingest

__all__ = [
    "NotAssigned",
    "agent_account_ensure",
    "agent_token_ensure",
    "gpu_sample_minutes_prune",
    "gpu_samples_downsample",
    "gpu_samples_ingest",
    "gpu_set_state",
    "gpus_report_failed",
    "job_progress_report",
    "jobs_requeue_from_gpus",
    "jobs_requeue_from_nodes",
    "node_heartbeat",
    "node_leave",
    "node_register",
    "node_set_state",
    "nodes_mark_silent_down",
]
