"""Every write of the telemetry app goes through these functions (keyword-only, atomic):
the inventory (nodes.py, with what agents report of power limits: power_limits.py), GPUs that
die (gpu_failures.py), an operator's clearing of a GPU's at-risk flag (gpu_health.py), GPU
samples (samples.py), each GPU's power curve (power_curves.py) and learnt speed (gpu_speeds.py).
Who may report for what: access.py. What a lost node or GPU means for its jobs is the scheduler's
(telemetry.signals, received by scheduler.dispatch)."""
from .gpu_failures import gpus_report_failed
from .gpu_health import NotAtRisk, gpu_at_risk_clear
from .gpu_speeds import gpu_speeds_write
from .nodes import (
    agent_account_ensure,
    agent_token_ensure,
    gpu_set_state,
    node_heartbeat,
    node_leave,
    node_leaving,
    node_register,
    node_set_state,
    nodes_mark_silent_down,
)
from .power_curves import gpu_power_curves_refit
from .samples import gpu_sample_minutes_prune, gpu_samples_downsample, gpu_samples_ingest

__all__ = [
    "NotAtRisk",
    "agent_account_ensure",
    "agent_token_ensure",
    "gpu_at_risk_clear",
    "gpu_power_curves_refit",
    "gpu_sample_minutes_prune",
    "gpu_samples_downsample",
    "gpu_samples_ingest",
    "gpu_set_state",
    "gpu_speeds_write",
    "gpus_report_failed",
    "node_heartbeat",
    "node_leave",
    "node_leaving",
    "node_register",
    "node_set_state",
    "nodes_mark_silent_down",
]
