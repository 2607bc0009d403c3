"""The virtual-time loop on hand-checked scenarios: energy, waiting, SLO time, failures."""
import pytest

from scheduler.optimizer.catalog_predictions import CatalogPredictions
from scheduler.simulation.engine import Simulation
from scheduler.simulation.metrics import policy_metrics
from scheduler.simulation.policies import Policy
from scheduler.simulation.scenario import Failure

from .factory import ROWS, V100_BUSY_W, job, scenario, truth

ROUND_ROBIN = Policy("round_robin", "round_robin", "catalog")


def run(sc, policy=ROUND_ROBIN):
    return Simulation(sc, truth(), policy, CatalogPredictions(ROWS)).run()


def test_one_job_alone_draws_busy_power_for_its_duration():
    result = run(scenario([job("a", 3600)]))
    metrics = policy_metrics(result)
    assert result.jobs[0].done_at == pytest.approx(3600)
    assert result.energy_j == pytest.approx(V100_BUSY_W * 3600)
    assert metrics["energy_kwh"] == pytest.approx(V100_BUSY_W * 3600 / 3.6e6, abs=1e-3)
    assert metrics["energy_per_step_j"] == pytest.approx(V100_BUSY_W / 10.0)
    assert metrics["slo_violation"] == 0.0
    assert metrics["completed"] == 1


def test_a_waiting_job_counts_below_t_min_and_starts_at_the_next_round():
    """Two one-hour jobs, one GPU: b waits for a, starts in the round at 3600 s."""
    result = run(scenario([job("a", 3600), job("b", 3600)]))
    done = {s.job.id: s.done_at for s in result.jobs}
    metrics = policy_metrics(result)
    assert done == {"a": pytest.approx(3600), "b": pytest.approx(7200)}
    assert result.energy_j == pytest.approx(2 * V100_BUSY_W * 3600)
    assert metrics["slo_violation"] == pytest.approx(3600 / (3600 + 7200), abs=1e-4)
    assert metrics["avg_jct_s"] == pytest.approx(5400)
    assert metrics["makespan_s"] == pytest.approx(7200)
    # x = steps / (JCT x T_min): a 36000 / (3600 x 5) = 2, b 1; Jain = 9 / (2 x 5)
    assert metrics["jain_fairness"] == pytest.approx(0.9, abs=1e-4)


def test_a_job_arriving_mid_round_waits_for_the_next_round():
    result = run(scenario([job("a", 3600, arrival_s=100)]))
    assert result.jobs[0].done_at == pytest.approx(360 + 3600)
    assert result.jobs[0].below_s == pytest.approx(260)


def test_a_throughput_below_t_min_counts_as_violation_time():
    result = run(scenario([job("a", 3600, min_throughput=20.0)]))  # 10 steps/s < 20
    assert policy_metrics(result)["slo_violation"] == pytest.approx(1.0)


def test_a_failed_gpu_requeues_its_job_which_restarts_elsewhere_from_its_checkpoint():
    """The job never checkpoints: failing at 100 s loses its 1000 steps. Pending to the round
    at 360 s; on the other GPU it first pays the default restart overhead (30 s, below T_min:
    no step is made), then does all 36000 steps at 10/s."""
    sc = scenario([job("a", 3600)], v100s=2, failures=(Failure(100.0, "v100-s0-g0"),))
    result = run(sc)
    state = result.jobs[0]
    metrics = policy_metrics(result)
    assert state.last_gpus == ("v100-s0-g1",)
    assert result.migrations == 1
    assert state.done_at == pytest.approx(360 + 30 + 3600)
    assert state.below_s == pytest.approx(260 + 30)
    assert result.energy_j == pytest.approx(V100_BUSY_W * (100 + 30 + 3600))
    assert (metrics["restarts"], metrics["moves"], metrics["preemptions"]) == (1, 0, 0)
    assert result.lost_gpu_s == pytest.approx({"failed": 100.0, "overhead": 30.0})
    assert metrics["busy_gpu_hours"] == pytest.approx((100 + 30 + 3600) / 3600, abs=1e-3)


def test_jobs_left_at_the_horizon_are_not_completed():
    result = run(scenario([job("a", 3600)], horizon_s=720))
    metrics = policy_metrics(result)
    assert metrics["completed"] == 0
    assert metrics["avg_jct_s"] is None
    assert result.jobs[0].remaining == pytest.approx(36000 - 7200)
