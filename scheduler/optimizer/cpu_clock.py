"""The clock of the solvers' time limits: CPU seconds of the solving thread, not wall-clock
seconds.

A limit counted in wall-clock time shrinks with the machine's load. With the benchmark at
6144 GPUs beside CPU-burning processes (a 2-core machine at load 5-20), the `cells`
coordinator's admission decision ran out of its share of the limit: the rounded relaxation
(one job short) or the greedy decision (180 jobs short) guided the cells, and the same
instance was decided worse than on a quiet machine, with nothing said. Counted in CPU time, a
solve gets the same work whatever else runs beside it, so it decides what a quiet machine
decides (the same work takes up to about half as much CPU time again on a busy machine, whose
caches are shared, still far inside the limits); the round takes longer in wall-clock time
instead. Not exactly, though: a solve stopped by the clock on a loaded machine has done less
than on a quiet one, so `simulate`, whose figures must not depend on what runs beside it, stops
its integer programs by work instead (`Limit.nodes`: branch-and-bound nodes, counted by HiGHS
itself, the same on any machine). No single work limit means the same for every phase and size,
and operators set the limit in seconds, so the control plane keeps the clock.

The clock is the CPU time of the calling thread (a web process's or worker's other threads do
not count) plus that of the process's finished child processes: CBC runs as one, which PuLP
waits for, and is itself told to count CPU time. HiGHS counts wall-clock time only, so it gets
no time limit of its own: a callback interrupts it once this clock passes the deadline
(`stop_at`). HiGHS calls it between simplex iterations and branch-and-bound nodes, so a stop
comes within a fraction of a second of the deadline.
"""
import math
import os
import time
from dataclasses import dataclass

import highspy

MIP_INTERRUPT = highspy.cb.HighsCallbackType.kCallbackMipInterrupt
INTERRUPTS = (
    highspy.cb.HighsCallbackType.kCallbackSimplexInterrupt,
    highspy.cb.HighsCallbackType.kCallbackIpmInterrupt,
    highspy.cb.HighsCallbackType.kCallbackMipInterrupt,
)


def cpu_now() -> float:
    """CPU seconds of this thread and of the child processes waited for (CBC)."""
    times = os.times()
    return time.thread_time() + times.children_user + times.children_system


@dataclass(frozen=True)
class Limit:
    """Where a HiGHS run stops: at the CPU-clock `deadline`, or (`nodes` > 0) once its
    branch-and-bound has explored `nodes` nodes, a deterministic work limit (no deadline then:
    `simulate`'s, SolverSettings.node_limit)."""

    deadline: float
    nodes: int = 0

    @classmethod
    def of(cls, started: float, seconds: float, nodes: int) -> "Limit":
        return cls(math.inf, nodes) if nodes > 0 else cls(started + seconds)


def interrupt_after(callback_type, message, data_out, data_in, limit: Limit) -> None:
    """HiGHS callback: stop (model status kInterrupt) once the CPU clock passes the deadline, or
    the MIP's node count reaches the limit's `nodes`."""
    if not limit.nodes and cpu_now() >= limit.deadline:
        data_in.user_interrupt = True
    elif limit.nodes and int(callback_type) == int(MIP_INTERRUPT) and data_out.mip_node_count >= limit.nodes:
        data_in.user_interrupt = True


def stop_at(highs: highspy.Highs, deadline: float) -> None:
    """Make a highspy model stop at the CPU-clock `deadline` (see the module's text)."""
    highs.stop_limit = Limit(deadline)  # highspy keeps no reference to a callback's data: this one does
    highs.setCallback(interrupt_after, highs.stop_limit)
    for callback_type in INTERRUPTS:
        highs.startCallback(callback_type)


def has_solution(highs: highspy.Highs) -> bool:
    """Whether HiGHS holds a feasible solution: PuLP reads an interrupted run as 'integer
    feasible' even without one (it checks for one only after a time or iteration limit)."""
    return highs.getInfo().primal_solution_status == highspy.SolutionStatus.kSolutionStatusFeasible
