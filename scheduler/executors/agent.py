"""GOGH's own node agent as an executor (GOGH_EXECUTOR=agent, the default).

The agent pulls: it reads its node's assignments (scheduler.dispatch.assignments) and reports
progress and ends itself (scheduler.dispatch.progress), and stops a run whose allocation the
control plane closed. So the control plane has nothing to push through this executor, and
its snapshot is empty: the agents' own reports are the truth of their nodes."""
from collections.abc import Collection

from .base import Executor, Launch, Snapshot


class AgentExecutor(Executor):
    name = "agent"
    pushes = False

    def snapshot(self, *, waiting_on: Collection[str] = ()) -> Snapshot:
        return Snapshot(nodes=[], runs=[])

    def submit(self, launch: Launch) -> str:
        return f"agent:{launch.job_id}"  # the allocation is the message; its agent polls it

    def signal(self, external_id: str, *, kill: bool) -> None:
        return None  # a closed allocation is the notice; its agent stops the run
