"""The GOGH node agent: registers a GPU node, heartbeats, samples its GPUs, runs its jobs.

Imports no Django and nothing outside the standard library except `pynvml` (nvidia-ml-py, only
for the NVML backend), so it installs on a GPU node without the web stack. It talks to the
control plane over HTTP with a token (docs/agent.md).
"""
# 0.7.0: a service replica's traffic (GOGH_TRAFFIC lines) sent with its progress reports;
# 0.6.0: power limits: applied from the assignments' power_limits_w, reported at registration
# and in heartbeats, the default put back on idle GPUs and on stop;
# 0.5.0: heartbeats from their own thread, job reports batched (job-progress/batch/), Retry-After
# honoured, fence time from the control plane's answers;
# 0.4.0: assignments list `partners` (several jobs may share a GPU), the partner file one per line;
# 0.3.0: jobs keyed on placement, not allocation ids (docs/agent.md)
AGENT_VERSION = "0.7.0"
