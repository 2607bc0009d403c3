"""What the report says about one policy's run.

- energy_kwh: energy of the GPUs hosting work over the whole run.
- energy_per_step_j: that energy over the training steps done (all jobs' steps, useful ones:
  work redone after an interruption is not counted twice).
- slo_violation: fraction of job-time (arrival to completion, or to the end of the run) in
  which a job ran below its T_min, waiting included.
- avg_jct_s: mean completion time (completion - arrival) of completed jobs.
- makespan_s: first arrival to last completion.
- jain_fairness: Jain's index over completed jobs of x_j = total_steps / (JCT x T_min), the
  average throughput a job got over its time in the system relative to what it asked for.
- completed: jobs finished by the end of the run; stranded_jobs: jobs never placed by then
  (waiting from their arrival to the end, e.g. for a throughput no GPU is predicted to give).
- probes, probed_jobs: exploration probes placed (explore.py; 0 for a policy that does not
  explore) and the jobs they ran.
- moves: a placed job put on other GPUs by a round; preemptions: a placed job sent back to
  pending by a round; restarts: runs interrupted (moves, preemptions, GPU failures);
  max_moves_per_job: the most moves of one job; jobs_by_moves: {moves: jobs moved that
  often}. migrations (older): placements on GPUs other than the job's last, a move or a
  resume elsewhere after a preemption or failure.
- lost_gpu_hours: GPU-hours of work thrown away by interruptions (since the last checkpoint)
  plus those of restart overheads, by cause in lost_gpu_hours_by_cause; busy_gpu_hours:
  GPU-hours of the GPUs hosting at least one job.
- tenant_jain, max_finish_time_fairness, quota_violations, energy_kwh_by_tenant: see
  tenant_metrics (and tenants.py).
- power_limit_share, prediction_mape_by_gpu_age, slow_gpu_flagged_after_h: see board_watch.py.
- power_limit_speed_mape (a learning policy's; None for the others, or without a limit that
  slows a job): see limit_metrics.
- services (None: the run served none): service_watch.py's figures, and training_energy_per_step_j:
  the energy of the GPUs' training jobs (all of it less the replicas' share) over the training
  steps. The replicas are no job of the figures above, but their GPUs' energy is in energy_kwh
  and energy_per_step_j, and those GPUs in busy_gpu_hours.
"""
import statistics
from collections import Counter

from .engine import PolicyRun


def policy_metrics(run: PolicyRun) -> dict:
    done = [s for s in run.jobs if s.done_at is not None]
    arrived = [s for s in run.jobs if s.job.arrival_s <= run.end_s]
    steps = sum(s.job.total_steps - max(0.0, s.remaining) for s in run.jobs)
    in_system = sum((s.done_at if s.done_at is not None else run.end_s) - s.job.arrival_s for s in arrived)
    jct = [s.done_at - s.job.arrival_s for s in done]
    x = [s.job.total_steps / (j * s.job.min_throughput) for s, j in zip(done, jct) if j > 0]
    first = min((s.job.arrival_s for s in run.jobs), default=0.0)
    return {
        "energy_kwh": round(run.energy_j / 3.6e6, 3),
        "energy_per_step_j": round(run.energy_j / steps, 4) if steps else None,
        "slo_violation": round(sum(s.below_s for s in arrived) / in_system, 4) if in_system else 0.0,
        "avg_jct_s": round(statistics.fmean(jct), 1) if jct else None,
        "makespan_s": round(max(s.done_at for s in done) - first, 1) if done else None,
        "jain_fairness": round(jain(x), 4) if x else None,
        "completed": len(done),
        "stranded_jobs": sum(1 for s in run.jobs if not s.last_gpus),
        "jobs": len(run.jobs),
        "solves": run.solves,
        "solve_seconds": round(run.solve_seconds, 2),
        "migrations": run.migrations,
        "probes": run.probes,
        "probed_jobs": run.probed_jobs,
        **work_metrics(run),
        **tenant_metrics(run),
        **(run.boards.metrics() if run.boards else {}),
        "power_limit_speed_mape": limit_metrics(run),
        "services": service_metrics(run, steps),
    }


def limit_metrics(run: PolicyRun) -> dict | None:
    """{"all", "late": mean absolute percentage error, "rounds": job-rounds scored}: the speed
    fraction each placed job was planned at under its power limit against the true one, every
    round, where the limit slows the job (truly or as planned); "late": the rounds after the
    middle of the arrivals, when most workloads have run at limits before."""
    errors = run.limit_speed_errors
    if not errors:
        return None
    arrivals = [s.job.arrival_s for s in run.jobs]
    middle = (min(arrivals) + max(arrivals)) / 2
    late = [e for t, e in errors if t >= middle]
    return {"all": round(statistics.fmean(e for _, e in errors), 4),
            "late": round(statistics.fmean(late), 4) if late else None, "rounds": len(errors)}


def service_metrics(run: PolicyRun, steps: float) -> dict | None:
    if run.services is None:
        return None
    served = run.services.metrics()
    training_j = run.energy_j - sum(run.services.energy_j.values())
    return {**served, "training_energy_per_step_j": round(training_j / steps, 4) if steps else None}


def tenant_metrics(run: PolicyRun) -> dict:
    """- tenant_jain: Jain's index over tenants of x_i = GPU time received / GPU time entitled,
      both over the stretches in which the tenant had jobs in the system; entitled: the
      cluster's GPUs (at most all tenants' demand, D_j per job) split by shares among the
      tenants with jobs, none above its demand (weighted max-min, optimizer.entitlement.water_fill).
    - max_finish_time_fairness: the largest rho over completed jobs, rho = JCT / JCT with 1/n
      of the cluster (gavel_policy.finish_time_fairness).
    - quota_violations: GPU-seconds a tenant was denied below its quota while others borrowed
      (TenantLedger.denied, integrated over the run).
    - energy_kwh_by_tenant: the energy of the GPUs its jobs held (a shared GPU split evenly)."""
    ledger = run.tenants
    rhos = [s.ftf_rho for s in run.jobs if s.ftf_rho is not None]
    ratios = ledger.ratios() if ledger else {}
    return {
        "tenant_jain": round(jain(list(ratios.values())), 4) if ratios else None,
        "tenant_received_over_entitled": {t: round(r, 4) for t, r in sorted(ratios.items())},
        "max_finish_time_fairness": round(max(rhos), 4) if rhos else None,
        "quota_violations": round(ledger.denied_gpu_s, 1) if ledger else 0.0,
        "energy_kwh_by_tenant": {t: round(j / 3.6e6, 3) for t, j in sorted(ledger.energy_j.items())} if ledger else {},
    }


CAUSES = ("moved", "preempted", "failed", "overhead")


def work_metrics(run: PolicyRun) -> dict:
    """Interruptions and the work they cost (work.py)."""
    hours = {cause: round(run.lost_gpu_s.get(cause, 0.0) / 3600, 3) for cause in CAUSES}
    return {
        "moves": run.interruptions.get("moved", 0),
        "preemptions": run.interruptions.get("preempted", 0),
        "restarts": sum(run.interruptions.values()),
        "max_moves_per_job": max((s.moves for s in run.jobs), default=0),
        "jobs_by_moves": {str(n): count for n, count in sorted(Counter(s.moves for s in run.jobs).items())},
        "lost_gpu_hours": round(sum(run.lost_gpu_s.values()) / 3600, 3),
        "lost_gpu_hours_by_cause": hours,
        "busy_gpu_hours": round(run.busy_gpu_s / 3600, 3),
    }


def jain(values: list[float]) -> float:
    """Jain's index (sum x)^2 / (n sum x^2), 1 = all equal. With no value, or all of them 0,
    everyone is treated alike: 1 (the formula would divide by zero). Also the dashboard's
    fairness axis (gogh_web.dashboard.tradeoff)."""
    square_sum = sum(v * v for v in values)
    if not values or square_sum <= 0:
        return 1.0
    return sum(values) ** 2 / (len(values) * square_sum)


def learning_curve(curve: dict[int, list[float]], up_to: int, stranded: dict[int, list] | None = None) -> dict:
    """{"n": {"mape", "samples", "stranded", "stranded_mape"}} for n = 0..up_to observations:
    placed jobs' error (mape None: no sample); `stranded` counts the samples (rounds x jobs)
    of jobs never placed that no configuration was predicted to serve, `stranded_mape` their
    error on their truly fastest configuration (None: none, or no estimate there)."""
    stranded = stranded or {}

    def mean(values):
        known = [v for v in values if v is not None]
        return round(statistics.fmean(known), 4) if known else None

    return {
        str(n): {
            "mape": mean(curve.get(n, ())), "samples": len(curve.get(n, ())),
            "stranded": len(stranded.get(n, ())), "stranded_mape": mean(stranded.get(n, ())),
        }
        for n in range(up_to + 1)
    }
