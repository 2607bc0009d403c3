"""State builders of the scheduler's live kinds: the one shape of each kind, shared by snapshots
and events (no database)."""
import math
from datetime import UTC, datetime

from catalog.models import GpuType, Workload
from scheduler import live
from scheduler.models import Allocation, Job, JobInterruption, SolveRun, SolverConfig, Tenant
from telemetry.models import Gpu, Node

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def _job(**fields):
    from django.contrib.auth.models import User

    job = Job(pk=7, name="exp", workload=Workload(name="ResNet-50 (batch size 64)"), tenant=Tenant(slug="research"),
              owner=User(username="alice"), state="running", min_throughput=8.0, max_gpus=2, priority=3,
              steps_done=250, current_step=250, total_steps=1000, submitted_at=T0, placed_at=T0, started_at=T0)
    for name, value in fields.items():
        setattr(job, name, value)
    return job


def _allocation(gpu_id, host, gpu_type="v100", predicted=12.0):
    gpu = Gpu(pk=gpu_id, node=Node(hostname=host), gpu_type=GpuType(name=gpu_type))
    return Allocation(gpu=gpu, predicted_throughput=predicted)


def test_job_state_has_placement_predictions_slo_and_progress():
    allocations = [_allocation(12, "b"), _allocation(11, "a")]
    data = live.job_state(_job(), allocations=allocations, observed_throughput=7.5, partner_job_ids={9, 4})
    assert data["placement"] == {"gpu_type": "v100", "num_gpus": 2, "partner_job_ids": [4, 9], "nodes": ["a", "b"],
                                 "gpu_ids": [11, 12]}
    assert data["predicted_throughput"] == 12.0 and data["observed_throughput"] == 7.5
    assert data["slo"] == "violated"  # 7.5 < T_min 8
    assert data["progress"] == {"steps_done": 250, "current_step": 250, "resume_step": 0, "total_steps": 1000,
                                "fraction": 0.25, "checkpoint_step": None, "checkpoint_at": None}
    assert (data["restarts"], data["steps_lost"], data["interruptions"]) == (0, 0, {"count": 0, "results": []})
    assert data["started_at"] == T0.isoformat() and data["finished_at"] is None
    assert (data["workload"], data["tenant"], data["owner"]) == ("ResNet-50 (batch size 64)", "research", "alice")
    assert {
        "id", "state", "pending_reason", "priority", "min_throughput", "max_gpus", "submitted_at", "placed_at"
    } <= set(data)


def test_job_without_placement_or_observation_is_unknown():
    data = live.job_state(_job(state="pending", total_steps=None), allocations=[], observed_throughput=None)
    assert data["placement"] is None and data["predicted_throughput"] is None
    assert data["slo"] == "unknown" and data["progress"]["fraction"] is None


def test_a_restarted_job_shows_its_current_run_and_keeps_its_best():
    """Restarted at its checkpoint 1200 after reaching 1540: the bar follows the current run
    (1300 of 5000), steps_done stays the most it reached."""
    job = _job(steps_done=1540, current_step=1300, resume_step=1200, total_steps=5000, checkpoint_step=1200,
               checkpoint_at=T0, restarts=2, steps_lost=340)
    interruptions = live.interruptions_state(1, [JobInterruption(
        kind="moved", reason="Moved to 2 x v100 by round 12.", at=T0, steps_done=1540, resume_step=1200,
        steps_lost=340, was_running=True, overhead_s=12.5)])
    data = live.job_state(job, allocations=[], observed_throughput=None, interruptions=interruptions)
    assert data["progress"] == {"steps_done": 1540, "current_step": 1300, "resume_step": 1200, "total_steps": 5000,
                                "fraction": 0.26, "checkpoint_step": 1200, "checkpoint_at": T0.isoformat()}
    assert (data["restarts"], data["steps_lost"]) == (2, 340)
    assert data["interruptions"] == {"count": 1, "results": [{
        "kind": "moved", "reason": "Moved to 2 x v100 by round 12.", "at": T0.isoformat(), "steps_done": 1540,
        "resume_step": 1200, "steps_lost": 340, "was_running": True}]}


def test_the_fraction_is_capped_at_one():
    assert live.progress_state(_job(current_step=1200, total_steps=1000))["fraction"] == 1.0


def test_slo_met_at_exactly_t_min_and_mixed_gpu_types_named_together():
    assert live.slo_status(8.0, 8.0) == "met"
    placement = live.placement_state([_allocation(1, "a", "v100"), _allocation(2, "b", "k80")])
    assert placement["gpu_type"] == "k80+v100"


def test_non_finite_numbers_become_null_so_any_json_column_takes_them():
    run = SolveRun(
        pk=1, solver="ilp", status="optimal", objective=math.inf, gap=math.nan, duration_s=0.5, started_at=T0
    )
    data = live.solve_run_state(run)
    assert data["objective"] is None and data["gap"] is None and data["duration_s"] == 0.5
    assert data["started_at"] == T0.isoformat() and "decision" not in data


def test_solver_config_state_has_every_setting():
    data = live.solver_config_state(SolverConfig(pk=1, base_energy_weight=2.5, adaptive_weight=False))
    assert data["base_energy_weight"] == 2.5 and data["adaptive_weight"] is False and data["load_window"] == 20
    assert {field.attname for field in SolverConfig._meta.concrete_fields} - {"updated_at"} == set(data)
