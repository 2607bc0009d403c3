"""What the device check saw, as JSON on stdout: the node and GPUs the real agent registered,
NVML's samples (rate, idle and busy power), the jobs (with their checkpoints, restarts and
interruptions), the catalog measurements their telemetry made, and the predictions before and
after them. Run with the check's environment (GOGH_VAR_DIR), after the job ended."""
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gogh_web.settings")
import django

django.setup()

from catalog.models import Measurement, PredictionRecord  # noqa: E402 -- after django.setup()
from scheduler.models import Job, SolveRun  # noqa: E402 -- after django.setup()
from telemetry.models import Gpu, GpuSample, Node  # noqa: E402 -- after django.setup()


def power_summary(samples: list) -> dict:
    watts = [s.power_w for s in samples if s.power_w is not None]
    if not watts:
        return {"samples": len(samples)}
    return {"samples": len(samples), "mean_w": round(statistics.fmean(watts), 1),
            "median_w": round(statistics.median(watts), 1), "min_w": round(min(watts), 1),
            "max_w": round(max(watts), 1),
            "utilization_mean": round(statistics.fmean(utils), 3) if (utils := [s.utilization for s in samples
                                                                              if s.utilization is not None]) else None}


def tau_on(estimates: dict, gpu_type: str) -> float | None:
    """The record's single-GPU throughput estimate on `gpu_type`."""
    for config, tau in zip(estimates.get("configs", []), estimates.get("tau", [])):
        if config[0] == gpu_type and config[1] == 1:
            return tau
    return None


def main() -> None:
    job = Job.objects.order_by("id").first()  # the ResNet-50 job: the samples are split around it
    samples = list(GpuSample.objects.order_by("ts"))
    span = (samples[-1].ts - samples[0].ts).total_seconds() if len(samples) > 1 else 0.0
    running = [
        s
        for s in samples
        if job and job.started_at and s.ts >= job.started_at and (not job.finished_at or s.ts <= job.finished_at)
    ]
    before = [s for s in samples if job and job.started_at and s.ts < job.started_at]
    steady = [s for s in running if s.utilization is not None and s.utilization >= 0.5]
    records = PredictionRecord.objects.order_by("id")
    out = {
        "nodes": [{"hostname": n.hostname, "state": n.state, "gpus": [
            {"index": g.index, "uuid": g.uuid, "product_name": g.product_name, "gpu_type": g.gpu_type.name,
             "memory_gb": g.memory_gb, "pci_bus_id": g.pci_bus_id, "numa_node": g.numa_node, "state": g.state,
             "power_limit_range_w": [g.power_limit_min_w, g.power_limit_max_w],
             "power_limit_default_w": g.power_limit_default_w, "power_limit_w": g.power_limit_w,
             "power_limit_error": g.power_limit_error, "health": g.health}
            for g in Gpu.objects.filter(node=n).select_related("gpu_type").order_by("index")]}
            for n in Node.objects.all()],
        "samples": {"count": len(samples), "span_s": round(span, 1),
                    "per_second": round((len(samples) - 1) / span, 3) if span else None,
                    "fields_null": {f: sum(getattr(s, f) is None for s in samples) for f in
                                    ("power_w", "utilization", "memory_used_mb", "sm_clock_mhz", "temperature_c",
                                     "ecc_corrected", "ecc_uncorrected", "retired_pages")},
                    "before_job": power_summary(before), "during_job": power_summary(running),
                    "during_job_util_ge_0.5": power_summary(steady),
                    "memory_used_mb_max": max((s.memory_used_mb or 0) for s in samples) if samples else None,
                    "temperature_c_max": max((s.temperature_c or 0) for s in samples) if samples else None},
        "jobs": [{"id": j.id, "workload": j.workload.name, "state": j.state, "state_reason": j.state_reason,
                  "steps_done": j.steps_done, "total_steps": j.total_steps, "checkpoint_step": j.checkpoint_step,
                  "resume_step": j.resume_step, "restarts": j.restarts, "steps_lost": j.steps_lost,
                  "interruptions": [{"kind": i.kind, "reason": i.reason, "steps_done": i.steps_done,
                                     "resume_step": i.resume_step, "steps_lost": i.steps_lost,
                                     "overhead_s": i.overhead_s} for i in j.interruptions.order_by("at", "id")],
                  "placed_s": j.placed_at and round((j.placed_at - j.submitted_at).total_seconds(), 1),
                  "ran_s": j.finished_at and j.started_at and round((j.finished_at - j.started_at).total_seconds(), 1),
                  "allocations": [{"gpu_type": a.gpu.gpu_type.name,
                                   "partners": sorted(p.workload.name for p in a.partners.all()),
                                   "predicted_throughput": a.predicted_throughput,
                                   "predicted_power_w": a.predicted_power_w, "power_limit_w": a.power_limit_w,
                                   "power_limit_speed": a.power_limit_speed} for a in j.allocations.all()]}
                 for j in Job.objects.order_by("id")],
        "telemetry_measurements": [{"workload": m.workload.name, "gpu_type": m.gpu_type.name,
                                    "partner": m.partner and m.partner.name, "throughput": m.throughput,
                                    "partner_throughput": m.partner_throughput,
                                    "power_w": m.power_w, "utilization": m.utilization, "memory_gb": m.memory_gb}
                                   for m in Measurement.objects.filter(source="telemetry")
                                   .select_related("workload", "gpu_type")],
        "predictions": [{"id": r.id, "job": r.job_id, "observations": len(r.observations),
                         "tau_h200": tau_on(r.estimates, "h200"),
                         "unmeasured_gpu_types": r.estimates.get("unmeasured_gpu_types")} for r in records],
        "solve_runs": [{"solver": s.solver, "status": s.status, "placed": s.num_placed, "seconds": s.duration_s}
                       for s in SolveRun.objects.order_by("id")[:5]],
    }
    json.dump(out, sys.stdout, indent=1, default=str)


if __name__ == "__main__":
    main()
