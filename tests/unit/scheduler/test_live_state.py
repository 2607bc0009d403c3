"""State builders of the scheduler's live kinds: the one shape of each kind, shared by snapshots
and events (no database)."""
import math
from datetime import UTC, datetime

from catalog.models import GpuType, Workload
from scheduler import live
from scheduler.models import Allocation, Job, SolveRun, SolverConfig, Tenant
from telemetry.models import Gpu, Node

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def _job(**fields):
    from django.contrib.auth.models import User

    job = Job(pk=7, name="exp", workload=Workload(name="ResNet-50 (batch size 64)"), tenant=Tenant(slug="research"),
              owner=User(username="alice"), state="running", min_throughput=8.0, max_gpus=2, priority=3,
              steps_done=250, total_steps=1000, submitted_at=T0, placed_at=T0, started_at=T0)
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
    assert data["progress"] == {"steps_done": 250, "total_steps": 1000, "fraction": 0.25}
    assert data["started_at"] == T0.isoformat() and data["finished_at"] is None
    assert (data["workload"], data["tenant"], data["owner"]) == ("ResNet-50 (batch size 64)", "research", "alice")
    assert {
        "id", "state", "pending_reason", "priority", "min_throughput", "max_gpus", "submitted_at", "placed_at"
    } <= set(data)


def test_job_without_placement_or_observation_is_unknown():
    data = live.job_state(_job(state="pending", total_steps=None), allocations=[], observed_throughput=None)
    assert data["placement"] is None and data["predicted_throughput"] is None
    assert data["slo"] == "unknown" and data["progress"]["fraction"] is None


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
