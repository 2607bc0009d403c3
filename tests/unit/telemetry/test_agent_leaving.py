"""An agent that stops announces its leave before it stops its jobs: the node drains first, so
no round places a job there between a job's stop report and the leave (CI once saw exactly
that: a job stopped by a leaving agent was placed on the same node again, then requeued by the
leave). Against the stand-in control plane: the order of what it hears; and a control plane
that refuses the announcement still gets the stop reports and the leave."""
import pytest

from .fake_control_plane import FakeControlPlane
from .test_agent_loop import assignment, python
from .test_agent_observe import start
from .test_agent_runner import wait_for

SLEEPS = python("import time\nwhile True: time.sleep(0.05)")


@pytest.fixture
def plane():
    plane = FakeControlPlane().start()
    yield plane
    plane.stop()


def run_then_stop(plane, tmp_path):
    plane.assignments = [assignment(1, SLEEPS)]
    agent = start(plane, tmp_path, simulate_run_commands=True)
    try:
        assert wait_for(lambda: any(report.get("status") == "running" for report in plane.progress))
    finally:
        agent.stop()
        agent.thread.join(timeout=15)
    assert not agent.thread.is_alive()


def test_the_node_drains_before_its_jobs_are_stopped_and_leaves_after(plane, tmp_path):
    run_then_stop(plane, tmp_path)
    assert plane.leave_order == ["leaving", "preempted", "leave"], plane.leave_order
    assert plane.leaving and plane.left


def test_a_control_plane_that_refuses_the_announcement_still_hears_the_stop_and_the_leave(plane, tmp_path):
    plane.leaving_status = 404
    run_then_stop(plane, tmp_path)
    assert plane.leave_order == ["leaving", "preempted", "leave"], plane.leave_order
    assert not plane.leaving and plane.left
