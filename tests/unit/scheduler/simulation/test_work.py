"""The job contract in the simulated cluster, checked by hand: checkpoints, what a move, a
preemption and a failure lose, the restart overhead, and the report's keys."""
import pytest

from catalog.measurement_record import MeasurementRecord
from scheduler.optimizer import registry
from scheduler.optimizer.problem import Placement, Plan
from scheduler.simulation.engine import Simulation
from scheduler.simulation.jobs import SimJob
from scheduler.simulation.metrics import policy_metrics
from scheduler.simulation.policies import Policy
from scheduler.simulation.work import JobState, interrupt, progress, start_run

from .factory import scenario, truth

ROWS = [MeasurementRecord(workload="A", gpu_type="v100", throughput=10.0)]
OVERHEAD_S = 45.0
PREDICTED = 8.0  # steps/s the scripted rounds predict; the truth runs A at 10


class Scripted:
    """Solve n (from 0) puts each job listed in SCRIPT[n] on the GPU of that index (None:
    pending); the last entry repeats. A stand-in for a solver that moves and preempts."""

    SCRIPT: list[dict] = []

    def __init__(self):
        self.solves, self.problems = 0, []

    def solve(self, problem):
        self.problems.append(problem)
        plan = Scripted.SCRIPT[min(self.solves, len(Scripted.SCRIPT) - 1)]
        self.solves += 1
        placements = {}
        for job in problem.jobs:
            index = plan.get(job.id)
            if index is not None:
                gpu = problem.gpus[index].id
                placements[job.id] = Placement(job.id, "v100", (gpu,), True, (), PREDICTED, 270.0)
        return Plan("scripted", placements, {}, 0.0, 0.0, "optimal", 1.0, 0.0)


def a_job(job_id: str, hours: float, interval_s: float | None, arrival_s: float = 0.0) -> SimJob:
    return SimJob(job_id, "A", arrival_s, 1, hours * 3600 * 10.0, 5.0, checkpoint_interval_s=interval_s)


def simulate(monkeypatch, jobs, script, **kwargs):
    """Rounds every 300 s; job b arriving at 1500 s (25 min) makes the round there solve."""
    Scripted.SCRIPT = script
    solver = Scripted()
    monkeypatch.setitem(registry.ENTRIES, "scripted", registry.SolverEntry("scripted", "Scripted", lambda: solver))
    sc = scenario(jobs, v100s=2, round_s=300.0, restart_overhead_s={"A": OVERHEAD_S}, **kwargs)
    run = Simulation(sc, truth(ROWS), Policy("scripted", "scripted", "catalog"), None).run()
    return run, {s.job.id: s for s in run.jobs}, solver.problems


MOVE_A_AT_25_MIN = [{"a": 0}, {"a": 1, "b": 0}]


def test_a_job_with_a_10_minute_interval_moved_at_25_minutes_loses_5_minutes_and_the_overhead(monkeypatch):
    """Checkpoints at 10 and 20 min (step 12000); moved at 25 min: back to 12000, 5 min of
    GPU time lost, then 45 s of overhead on the new GPU before the 24000 steps left."""
    run, states, _ = simulate(monkeypatch, [a_job("a", 1.0, 600.0), a_job("b", 3.0, None, arrival_s=1500.0)],
                           MOVE_A_AT_25_MIN)
    metrics = policy_metrics(run)
    assert run.lost_gpu_s == pytest.approx({"moved": 300.0, "overhead": OVERHEAD_S})
    assert states["a"].done_at == pytest.approx(1500 + OVERHEAD_S + 2400)
    assert states["a"].moves == 1 and states["b"].moves == 0
    assert metrics["jobs_by_moves"] == {"0": 1, "1": 1}
    assert (metrics["moves"], metrics["preemptions"], metrics["restarts"], metrics["max_moves_per_job"]) == (1, 0, 1, 1)
    assert metrics["lost_gpu_hours"] == pytest.approx((300 + OVERHEAD_S) / 3600, abs=1e-3)
    assert run.migrations == 1
    assert states["a"].below_s == pytest.approx(OVERHEAD_S)  # 10 steps/s meets T_min 5, but not while restarting


def test_a_job_that_never_checkpoints_loses_everything_it_did(monkeypatch):
    run, states, _ = simulate(monkeypatch, [a_job("a", 1.0, None), a_job("b", 3.0, None, arrival_s=1500.0)],
                           MOVE_A_AT_25_MIN)
    assert run.lost_gpu_s == pytest.approx({"moved": 1500.0, "overhead": OVERHEAD_S})
    assert states["a"].done_at == pytest.approx(1500 + OVERHEAD_S + 3600)
    assert policy_metrics(run)["energy_per_step_j"] * (36000 + 108000) == pytest.approx(run.energy_j)


def test_a_preempted_job_resumes_from_its_checkpoint_and_pays_the_overhead_when_placed_again(monkeypatch):
    """a (checkpoints every 20 min) is preempted at 25 min for b, resumes at 30 min on the same
    GPU (the arrivals of b at 1500 s and of c at 1800 s make those rounds solve; c waits for a)."""
    jobs = [a_job("a", 1.0, 1200.0), a_job("b", 3.0, None, arrival_s=1500.0), a_job("c", 1.0, None, arrival_s=1800.0)]
    run, states, _ = simulate(monkeypatch, jobs, [{"a": 0}, {"b": 1}, {"a": 0, "b": 1}, {"b": 1, "c": 0}])
    metrics = policy_metrics(run)
    assert (metrics["moves"], metrics["preemptions"], metrics["restarts"]) == (0, 1, 1)
    assert states["a"].preempted_at == [1500.0]
    assert run.migrations == 0  # back on its own GPU
    assert run.lost_gpu_s == pytest.approx({"preempted": 300.0, "overhead": OVERHEAD_S})
    assert states["a"].done_at == pytest.approx(1800 + OVERHEAD_S + (36000 - 12000) / 10)


def test_a_job_left_alone_is_never_interrupted_and_its_gpu_counts_busy(monkeypatch):
    run, states, _ = simulate(monkeypatch, [a_job("a", 1.0, 600.0)], [{"a": 0}])
    metrics = policy_metrics(run)
    assert (metrics["restarts"], metrics["lost_gpu_hours"], metrics["max_moves_per_job"]) == (0, 0.0, 0)
    assert metrics["lost_gpu_hours_by_cause"] == {"moved": 0.0, "preempted": 0.0, "failed": 0.0, "overhead": 0.0}
    assert metrics["busy_gpu_hours"] == pytest.approx(1.0)
    assert states["a"].done_at == pytest.approx(3600)


def test_progress_pays_the_overhead_first_and_checkpoints_inside_a_stretch():
    """Restart overhead 45 s, then 700 s of training at 10 steps/s with a 600 s interval: one
    checkpoint at 600 s of training (step 6000), 100 s unsaved; interrupted, back to 6000."""
    state = JobState(a_job("a", 1.0, 600.0), 36000.0, restart_due=True)
    start_run(state, Placement("a", "v100", ("g0",), True, (), 10.0, 270.0), 0.0, OVERHEAD_S)
    assert progress(state, 10.0, OVERHEAD_S + 700) == OVERHEAD_S
    assert (state.step, state.checkpoint_step, state.unsaved_gpu_s) == (pytest.approx(7000), pytest.approx(6000),
                                                                       pytest.approx(100))
    assert interrupt(state) == pytest.approx(100)
    assert (state.step, state.placement, state.restart_due) == (pytest.approx(6000), None, True)


def test_a_shared_gpu_counts_half_a_gpu_of_lost_time_per_job():
    state = JobState(a_job("a", 1.0, None), 36000.0)
    start_run(state, Placement("a", "v100", ("g0",), True, ("b",), 5.0, 135.0), 0.0, OVERHEAD_S)
    assert progress(state, 5.0, 100.0) == 0.0  # a first run pays no restart overhead
    assert interrupt(state) == pytest.approx(50.0)


def test_every_round_asks_keep_work_with_what_a_control_plane_knows_of_each_placed_job(monkeypatch):
    """Round at 25 min: a (placed at 0, checkpoint at 20 min) has run 300 s past it at its
    observed 10 steps/s; no restart measured yet, so the default 30 s overhead. Work at risk
    300 + 30 GPU-seconds; move penalty 330 s x 270 W over its 2100 s left, x 1.2, + 50 W. It is
    past its 600 s cool-down and outranks the waiting b. 300 s after its move a is pinned, and
    its restart's 45 s overhead is known."""
    jobs = [a_job("a", 1.0, 1200.0), a_job("b", 3.0, None, arrival_s=1500.0), a_job("c", 0.5, None, arrival_s=1800.0)]
    _, _, problems = simulate(monkeypatch, jobs, MOVE_A_AT_25_MIN + [{"a": 1, "b": 0}])
    a, b = problems[1].jobs
    assert (a.priority, b.priority) == (1, 0)
    assert a.work_at_risk == pytest.approx(330.0) and b.work_at_risk == 0.0
    assert a.move_penalty_w == pytest.approx(330 * 270 / 2100 * 1.2 + 50)
    assert not a.pinned and b.move_penalty_w is None
    a, b, c = problems[2].jobs  # c's arrival 300 s after the move: a paid 45 s, then trained 255 s
    assert a.pinned and b.pinned and not c.pinned
    assert a.work_at_risk == pytest.approx(255 + OVERHEAD_S)


def test_a_job_not_yet_observed_is_planned_at_the_rate_its_round_predicted():
    sim = Simulation(scenario([a_job("a", 1.0, None)]), truth(ROWS), Policy("x", "round_robin", "catalog"), None)
    state = sim.states["a"]
    start_run(state, Placement("a", "v100", ("v100-s0-g0",), True, (), PREDICTED, 270.0), 0.0, OVERHEAD_S)
    progress(state, 10.0, 50.0)  # 50 s of training: no telemetry report yet
    assert sim._running_work(state, 50.0).steps_per_s == PREDICTED
    progress(state, 10.0, 10.0)
    assert sim._running_work(state, 60.0).steps_per_s == 10.0
    assert sim._running_work(state, 60.0).steps_since_checkpoint == pytest.approx(600.0)
