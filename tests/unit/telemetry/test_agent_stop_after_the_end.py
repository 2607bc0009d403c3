"""A job stopped (moved, preempted) in its last steps that finishes them within its grace
period and exits 0 has succeeded: its final report must say so, not "preempted" (which the
control plane takes as "resume me from my checkpoint", and runs its last steps again)."""
from .test_agent_loop import assignment, plane as plane, python, run_agent as run_agent
from .test_agent_runner import wait_for

#: Reports 90 of 100 steps, is told to stop, does its last 10 steps and exits 0 (done).
FINISHES_WHEN_STOPPED = """
import signal, sys, time
from telemetry.agent import contract
job = contract.Job.from_environment()
job.progress(90, total=100)
while not job.preemption_requested:
    time.sleep(0.05)
job.progress(100, total=100)
sys.exit(0)
"""


def test_a_stopped_job_that_ends_its_last_steps_and_exits_0_is_reported_succeeded(plane, run_agent):
    plane.assignments = [assignment(1, python(FINISHES_WHEN_STOPPED), total_steps=100, resume_step=0,
                                    preemption_grace_s=30)]
    run_agent(plane)
    assert wait_for(lambda: any(p["job"] == 1 and p["steps"] == 90 for p in plane.progress), timeout=10)
    plane.assignments = []  # moved away just before its end
    assert wait_for(lambda: any(p["job"] == 1 and p["status"] != "running" for p in plane.progress), timeout=10)
    (final,) = [p for p in plane.progress if p["job"] == 1 and p["status"] != "running"]
    assert (final["status"], final["steps"], final["exit_code"]) == ("succeeded", 100, 0), final
