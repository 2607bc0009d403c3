"""Which executor runs GOGH's jobs (GOGH_EXECUTOR, docs/executors.md): GOGH's own node agents
(the default), which pull their assignments, or Slurm, which the control plane drives through
the executor sync (executor_sync.py)."""
from django.conf import settings

from ..executors.agent import AgentExecutor
from ..executors.base import Executor


def executor_pushes() -> bool:
    """Whether the control plane pushes its decisions through its executor (Slurm), so that
    agents run nothing and only observe."""
    return settings.GOGH_EXECUTOR != AgentExecutor.name


def executor_from_settings() -> Executor:
    """The executor GOGH_EXECUTOR names, configured from GOGH_SLURM."""
    if not executor_pushes():
        return AgentExecutor()
    from ..executors.slurm.executor import SlurmExecutor  # only a Slurm control plane needs its CLI driver

    slurm = settings.GOGH_SLURM
    return SlurmExecutor(job_prefix=slurm["job_prefix"], partition=slurm["partition"], bin_dir=slurm["bin_dir"],
                         command_timeout_s=slurm["command_timeout_s"])
