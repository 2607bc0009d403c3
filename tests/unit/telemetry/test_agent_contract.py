"""The agent under the job contract, with real job subprocesses and the stand-in control plane:
every report carries the run's latest checkpoint; a stopped job's end is a "preempted" report
(kept until settled); a re-listed job resumes where the control plane says; the fence does not
wait for a job's long grace period."""
import time
from pathlib import Path

from .test_agent_loop import assignment, plane as plane, python, run_agent as run_agent
from .test_agent_runner import wait_for
from .test_job_contract import CONTRACT_JOB


def reports(plane, job_id):
    return [p for p in plane.progress if p["job"] == job_id]


def test_a_moved_job_checkpoints_reports_preempted_and_resumes_where_the_control_plane_says(plane, run_agent,
                                                                                             tmp_path):
    plane.assignments = [assignment(1, python(CONTRACT_JOB), preemption_grace_s=30)]
    agent = run_agent(plane)
    assert wait_for(lambda: any((p["checkpoint_step"] or 0) >= 10 for p in reports(plane, 1)), timeout=10)
    plane.assignments = []  # moved away: the control plane waits for its stop (handover)
    assert wait_for(lambda: reports(plane, 1)[-1]["status"] == "preempted", timeout=10)
    stopped = reports(plane, 1)[-1]
    checkpoint = Path(stopped["checkpoint_path"])
    assert stopped["exit_code"] == 75 and stopped["checkpoint_step"] == stopped["steps"] > 10
    assert checkpoint == tmp_path / "logs" / "checkpoints" / "job-1" / f"step-{stopped['steps']}.txt"
    assert checkpoint.read_text() == str(stopped["steps"])
    assert wait_for(lambda: not agent._final_reports)  # settled: 200

    before = len(plane.progress)
    plane.assignments = [assignment(1, python(CONTRACT_JOB), gpu_indexes=(1,), placed_at="later",
                                    resume_step=stopped["steps"], resume_checkpoint=str(checkpoint))]
    assert wait_for(lambda: len(plane.progress) > before, timeout=10)
    first = plane.progress[before]
    assert first["status"] == "running" and first["steps"] >= stopped["steps"]
    assert first["checkpoint_step"] >= stopped["steps"]  # never behind what it resumed from
    log = tmp_path / "logs" / "job-1.out"
    assert wait_for(lambda: f"env {stopped['steps']} {checkpoint} " in log.read_text())
    assert wait_for(lambda: f"GOGH_PROGRESS step={stopped['steps'] + 1}\n" in log.read_text())


def test_a_job_that_exits_75_by_itself_is_reported_preempted_once_and_not_restarted(plane, run_agent):
    command = python("from telemetry.agent import contract\njob = contract.Job.from_environment()\n"
                     "job.progress(7, total=20)\njob.checkpoint(5, '/c/step-5')\njob.exit_preempted()")
    plane.assignments = [assignment(2, command)]
    agent = run_agent(plane)
    assert wait_for(lambda: any(p["status"] == "preempted" for p in plane.progress), timeout=10)
    time.sleep(0.6)  # several polls: still listed, the same placement
    final = [p for p in reports(plane, 2) if p["status"] != "running"]
    assert len(final) == 1 and final[0]["exit_code"] == 75 and "preempted" in final[0]["message"]
    assert (final[0]["steps"], final[0]["total_steps"], final[0]["checkpoint_step"],
            final[0]["checkpoint_path"]) == (7, 20, 5, "/c/step-5")
    assert 2 not in agent._running


def test_an_unsettled_preempted_report_is_sent_again_and_holds_the_next_run(plane, run_agent, tmp_path):
    plane.assignments = [assignment(3, python("import time; print('run', flush=True); time.sleep(60)"))]
    plane.progress_status[3] = 503  # not settled: kept, sent every turn
    agent = run_agent(plane)
    log = tmp_path / "logs" / "job-3.out"
    assert wait_for(lambda: log.exists() and "run" in log.read_text())
    plane.assignments = []
    assert wait_for(lambda: sum(r["status"] == "preempted" for b in plane.progress_batches for r in b) >= 2,
                    timeout=10)
    plane.assignments = [assignment(3, python("print('run', flush=True)"), placed_at="later")]
    time.sleep(0.8)
    assert log.read_text() == "run\n" and 3 in agent._final_reports  # the new run waits for the old one's end
    plane.progress_status[3] = 200
    assert wait_for(lambda: log.read_text() == "run\nrun\n", timeout=10)
    assert wait_for(lambda: reports(plane, 3)[-1]["status"] == "succeeded", timeout=10)
    assert [p["status"] for p in reports(plane, 3) if p["status"] != "running"] == ["preempted", "succeeded"]


def test_the_fence_does_not_wait_for_a_jobs_long_grace_period(plane, run_agent, tmp_path):
    stubborn = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('up', flush=True)\n" \
               "time.sleep(600)"
    plane.assignments = [assignment(4, python(stubborn), preemption_grace_s=3600),
                         assignment(5, python(stubborn), gpu_indexes=(1,), preemption_grace_s=3600)]
    agent = run_agent(plane, fence_after_s=3.0, grace_s=0.5)
    logs = [tmp_path / "logs" / f"job-{job}.out" for job in (4, 5)]
    assert wait_for(lambda: all(log.exists() and "up" in log.read_text() for log in logs))
    plane.assignments = plane.assignments[1:]  # job 4 withdrawn: it has an hour
    assert wait_for(lambda: [process.job_id for _, process in agent._stopping] == [4])
    time.sleep(0.5)
    assert agent._stopping  # still in its grace period
    plane.stop()  # out of touch: both are gone by fence time, the stopping one too
    out_of_touch = time.monotonic()
    # Both gone long before the hour's grace: the fence (3 s), not the grace, ends them; the
    # margin is for a loaded machine, the grace it rules out is 3600 s.
    assert wait_for(lambda: not agent._running and not agent._stopping, timeout=60)
    assert time.monotonic() - out_of_touch < 60
    assert {job for job, report in agent._final_reports.items() if report["status"] == "preempted"} == {4, 5}


FINISHES_IN_ITS_GRACE = (
    "import signal, sys, time\nfrom telemetry.agent.progress import report\n"
    "stop = []\nsignal.signal(signal.SIGTERM, lambda *_: stop.append(1))\n"
    "report(1, 3)\nwhile not stop: time.sleep(0.05)\n"
    "report(2, 3)\nreport(3, 3)\nsys.exit(0)"
)
STOPS_CLEANLY_EARLY = (
    "import signal, sys, time\nfrom telemetry.agent.progress import report\n"
    "stop = []\nsignal.signal(signal.SIGTERM, lambda *_: stop.append(1))\n"
    "report(1, 3)\nwhile not stop: time.sleep(0.05)\nsys.exit(0)"
)


def test_a_stopped_job_that_exits_0_at_its_last_step_reports_success_and_short_of_it_a_stop(plane, run_agent):
    """Exit 0 after SIGTERM is an end only when the job reported its last step: it finished in its
    grace period (the control plane keeps a late success). Short of it, it stopped cleanly without
    the contract's code, and is reported as a stop, to be resumed."""
    plane.assignments = [assignment(1, python(FINISHES_IN_ITS_GRACE), preemption_grace_s=10),
                         assignment(2, python(STOPS_CLEANLY_EARLY), gpu_indexes=(1,), preemption_grace_s=10)]
    run_agent(plane)
    assert wait_for(lambda: all(any(p["steps"] == 1 for p in reports(plane, j)) for j in (1, 2)), timeout=10)
    plane.assignments = []
    assert wait_for(lambda: all(reports(plane, j)[-1]["status"] != "running" for j in (1, 2)), timeout=10)
    finished, stopped = reports(plane, 1)[-1], reports(plane, 2)[-1]
    assert (finished["status"], finished["steps"], finished["exit_code"]) == ("succeeded", 3, 0)
    assert (stopped["status"], stopped["steps"], stopped["exit_code"]) == ("preempted", 1, 0)
    assert stopped["message"] == "Stopped by the agent: its allocation here was withdrawn or changed (exit status 0)."
