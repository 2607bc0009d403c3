"""The solver benchmark (`manage.py bench_solver`): instances from the reference data, every
solver on the same instances, a JSON report and a human table.

Instance of size N: K80, P100 and V100 in equal thirds (each a multiple of 4 GPUs), on nodes
of 8 and 4 GPUs alternately; about 0.75 x N jobs drawn from Gavel's 26 workloads over four
tenants and three priority levels, D_j from {1, 2, 4, 8}, T_min a random fraction
(0.2..0.8) of the job's best isolated throughput within D_j. Seed: seed + N. Idle GPUs are
powered down, the energy weight is the base weight (no history) and surplus throughput is
worth nothing, so the objective is the power of the GPUs that host work.

Contention mode (`contention` > 0): every size is solved twice, alone and then beside that
many CPU-burning processes (started before, killed after), and the table shows the second
run against the first: solvers' time limits count CPU time (cpu_clock.py), so a busy machine
must not change what they admit.
"""
import os
import random
import subprocess
import sys
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import replace

import pulp

from telemetry.agent.colocation import group_fraction

from .catalog_predictions import CatalogPredictions
from .cpu_clock import cpu_now
from .ilp_model import build, level_units
from .instance import compile_instance
from .power import PowerCurve
from .problem import GpuSpec, GpuTypeSpec, JobSpec, Problem, SolverSettings
from .registry import CATALOGUE, ENTRIES, get_solver

DEFAULT_SIZES = (64, 256, 1024, 6144)
GPU_TYPES = {  # per GPU, from catalog.gpu_type_defaults (datasheet TDP, idle placeholders)
    "k80": (12.0, 18.0, 150.0),
    "p100": (16.0, 33.0, 250.0),
    "v100": (16.0, 35.0, 300.0),
}
TENANTS = ("research", "vision", "speech", "ads")
GPU_CHOICES = (1, 1, 1, 1, 1, 2, 2, 4, 8)
GLOBAL_ILP_LIMIT_S = 60.0
MAX_BURNERS = 64  # contention mode: CPU-burning processes at most
BURN_CPU = "while True: pass"  # what each of them runs


def gpu_types() -> dict[str, GpuTypeSpec]:
    return {
        name: GpuTypeSpec(name, mem, idle, tdp, PowerCurve.from_points([], idle, tdp))
        for name, (mem, idle, tdp) in GPU_TYPES.items()
    }


def make_instance(size: int, predictions: CatalogPredictions, seed: int, settings: SolverSettings) -> Problem:
    rng = random.Random(seed + size)
    per_type = dict.fromkeys(GPU_TYPES, size // 3 // 4 * 4)
    per_type["v100"] += size - sum(per_type.values())
    gpus = []
    for gpu_type, count in per_type.items():
        node, left = 0, count
        while left > 0:
            width = 8 if node % 2 == 0 and left >= 8 else 4
            gpus += [
                GpuSpec(f"{gpu_type}-n{node}-g{i}", f"{gpu_type}-n{node}", gpu_type, f"sw{i // 4}")
                for i in range(width)
            ]
            node, left = node + 1, left - width
    workloads = [w for w in predictions.workloads() if any(predictions.tau(w, t, 1, True) for t in GPU_TYPES)]
    jobs = []
    for n in range(round(0.75 * size)):
        workload = rng.choice(workloads)
        max_gpus = rng.choice(GPU_CHOICES)
        best = max(
            (predictions.tau(workload, t, k, True) or 0.0) for t in GPU_TYPES for k in (1, 2, 4, 8) if k <= max_gpus
        )
        jobs.append(JobSpec(
            id=f"job-{n}", workload=workload, tenant=rng.choice(TENANTS),
            min_throughput=round(best * rng.uniform(0.2, 0.8), 4), max_gpus=max_gpus, priority=rng.choice((0, 0, 1, 2)),
        ))
    return Problem(
        jobs=tuple(jobs), gpus=tuple(gpus), gpu_types=gpu_types(), predictions=predictions, settings=settings
    )


def lp_bound(inst, admit_floors: dict[int, float]) -> float | None:
    """Objective of the LP relaxation of the power phase at the given admitted values."""
    model = build(inst, phase="power", admit_floors=admit_floors, relaxed=True)
    model.lp.solve(pulp.HiGHS(msg=False, timeLimit=120))
    return pulp.value(model.lp.objective) if model.lp.status == pulp.LpStatusOptimal else None


def slo_met(problem: Problem, plan) -> set[str]:
    """Placed jobs whose throughput by the catalog's numbers reaches T_min (in a group of three
    or more, the catalog's pairs combined as the optimiser does: telemetry/agent/colocation.py;
    below the default power limit, times the speed the predictions give at that limit)."""
    jobs = {j.id: j for j in problem.jobs}
    met = set()
    for placement in plan.placements.values():
        job = jobs[placement.job_id]
        pred = problem.predictions
        if not placement.partners:
            tau = pred.tau(job.workload, placement.gpu_type, placement.num_gpus, placement.consolidated)
        else:
            alone = pred.tau(job.workload, placement.gpu_type, 1, True)
            rho = group_fraction(
                pred.rho(job.workload, jobs[p].workload, placement.gpu_type) or 0.0 for p in placement.partners
            )
            tau = alone * rho if alone and rho else None
        if tau and placement.power_limit_w is not None:
            found = pred.at_power_limit(job.workload, placement.gpu_type, placement.power_limit_w)
            tau = tau * found[0] if found else None
        if tau and tau >= job.min_throughput - 1e-9:
            met.add(job.id)
    return met


def solver_runs(size: int) -> list[tuple[str, str, dict]]:
    """(report key, registry name, settings overrides) for one size: the catalogue's benchmark rows."""
    return [(key, entry.name, overrides) for entry in CATALOGUE for key, overrides in entry.bench_rows]


TABLE_SOLVERS = tuple(key for key, _, _ in solver_runs(0))
REFERENCE_ROWS = {key for key, name, _ in solver_runs(0) if ENTRIES[name].reference}
APPROXIMATE = {key for key, name, _ in solver_runs(0) if ENTRIES[name].approximate}


@contextmanager
def cpu_burners(count: int):
    """`count` processes that only burn CPU, for as long as the block runs (contention mode)."""
    burners = [subprocess.Popen([sys.executable, "-c", BURN_CPU]) for _ in range(count)]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
        for burner in burners:
            burner.wait()


def run(sizes=DEFAULT_SIZES, *, seed: int = 7, time_limit_s: float = 10.0, ilp_limit_s: float = GLOBAL_ILP_LIMIT_S,
        theta: int = 2, contention: int = 0, log=print) -> dict:
    """theta: jobs per GPU at most (2: pairs, as the catalog measures them; 3-4: groups,
    estimated from pairs; see telemetry/agent/colocation.py). contention: CPU-burning processes beside
    a second run of every size (see the module's text); 0: one run, alone."""
    from catalog.gavel import read_throughputs  # plain reader, no Django

    predictions = CatalogPredictions.from_gavel(read_throughputs())
    base = SolverSettings(adaptive_weight=False, throughput_value_w=0.0, time_limit_s=time_limit_s, gap=0.01, seed=seed,
                          migration_cost_w=0.0, theta=theta)
    report = {"seed": seed, "theta": theta, "time_limit_s": time_limit_s, "ilp_time_limit_s": ilp_limit_s,
              "contention": contention, "sizes": {}}
    for size in sizes:
        problem = make_instance(size, predictions, seed, base)
        rows = solve_all(problem, base, time_limit_s, ilp_limit_s, log)
        load = None
        if contention:
            quiet = rows
            log(f"  {size:>5} beside {contention} CPU-burning processes:")
            with cpu_burners(contention):
                rows = solve_all(problem, base, time_limit_s, ilp_limit_s, log)
                load = os.getloadavg()[0]
            for key, row in rows.items():
                row["quiet"] = {
                    k: quiet[key][k] for k in ("seconds", "cpu_seconds", "power_w", "placed", "placed_per_priority")
                }
                row["same_decision_as_quiet"] = row["_placements"] == quiet[key]["_placements"]
        _add_gaps(problem, rows)
        report["sizes"][str(size)] = {
            "gpus": len(problem.gpus),
            "jobs": len(problem.jobs),
            **({"load_1min": round(load, 1)} if load is not None else {}),
            **{k: {kk: vv for kk, vv in v.items() if not kk.startswith("_")} for k, v in rows.items()},
        }
        if rows["ilp"]["seconds"] and rows["ilp_cbc"]["seconds"]:
            report["sizes"][str(size)]["cbc_over_highs_time"] = round(
                rows["ilp_cbc"]["seconds"] / rows["ilp"]["seconds"], 2
            )
    return report


def solve_all(problem: Problem, base: SolverSettings, time_limit_s: float, ilp_limit_s: float, log) -> dict:
    """Every solver's row on one instance (`_met`, `_placements`: for the comparisons)."""
    rows = {}
    size = len(problem.gpus)
    for key, name, overrides in solver_runs(size):
        limit = ilp_limit_s if ENTRIES[name].reference else time_limit_s
        settings = replace(base, **{"time_limit_s": limit, **overrides})
        started, cpu_started = time.perf_counter(), cpu_now()
        plan = get_solver(name).solve(replace(problem, settings=settings))
        elapsed, cpu = time.perf_counter() - started, cpu_now() - cpu_started
        met = slo_met(problem, plan)
        rows[key] = {
            "seconds": round(elapsed, 3),
            "cpu_seconds": round(cpu, 3),
            "power_w": round(plan.power_w, 1),
            "placed": len(plan.placements),
            "slo_met": len(met),
            "status": plan.status,
            "gap": None,
            "fallback_reason": plan.fallback_reason,
            "placed_per_priority": placed_by_level(problem, plan),
            "_placements": plan.placements,
            "_met": met,
        }
        if ENTRIES[name].reference:
            rows[key].update(variables=plan.variables, constraints=plan.constraints, solver_gap=plan.gap)
        log(f"  {size:>5} {key:<17} {elapsed:8.2f} s  {plan.power_w:10.0f} W  placed {len(plan.placements)}")
    return rows


def placed_by_level(problem: Problem, plan) -> dict[str, int]:
    """Placed jobs per priority level, highest first (contention mode compares these)."""
    priority = {job.id: job.priority for job in problem.jobs}
    got = Counter(priority[job_id] for job_id in plan.placements)
    return {str(level): got[level] for level in sorted(set(priority.values()), reverse=True)}


def _add_gaps(problem: Problem, rows: dict) -> None:
    """Comparisons, on jobs meeting T_min by the catalog's numbers:
    - same_admission: as many jobs admitted per priority level as the ILP (then `vs_ilp` and
      `gap`, to the LP-relaxation bound at that admission, are meaningful);
    - same_jobs_as_ilp: exactly the ILP's jobs;
    - for the approximate solvers (genetic, cells) that admit differently, the global
      optimum at their own admission (`global_power_same_admission_w`, the ILP's power phase
      with their per-level counts as floors) and `vs_global_same_admission`, their loss of
      global optimality.
    """
    inst = compile_instance(problem)
    index = {job.id: j for j, job in enumerate(inst.jobs)}
    units = level_units(inst)

    def floors_of(met: set[str]) -> dict[int, float]:
        floors: dict[int, float] = {}
        for job_id in met:
            level = inst.jobs[index[job_id]].priority
            floors[level] = floors.get(level, 0.0) + inst.values[index[job_id]] / units[level]
        return {level: round(v, 6) for level, v in floors.items()}

    ilp_jobs = rows["ilp"]["_met"]
    ilp_floors = floors_of(ilp_jobs)
    bound = lp_bound(inst, ilp_floors)
    for key, row in rows.items():
        met = row.pop("_met")
        floors = floors_of(met)
        row["same_admission"] = floors == ilp_floors and row["placed"] == len(met)
        row["same_jobs_as_ilp"] = met == ilp_jobs and row["placed"] == len(met)
        row["admitted_per_priority"] = {str(k): round(v) for k, v in sorted(floors.items(), reverse=True)}
        row["lp_bound_w"] = round(bound, 1) if bound is not None else None
        if row["same_admission"] and bound is not None and row["power_w"] > 0:
            row["gap"] = round(max(0.0, (row["power_w"] - bound) / row["power_w"]), 5)
            row["vs_ilp"] = round(row["power_w"] / rows["ilp"]["power_w"] - 1, 5)
        if key in APPROXIMATE and not row["same_admission"] and row["placed"] == len(met):
            reference = global_power_at(inst, floors)
            row["global_power_same_admission_w"] = round(reference, 1) if reference else None
            if reference:
                row["vs_global_same_admission"] = round(row["power_w"] / reference - 1, 5)


def global_power_at(inst, floors: dict[int, float], time_limit_s: float = GLOBAL_ILP_LIMIT_S) -> float | None:
    """The global ILP's least power admitting at least `floors` per priority level."""
    model = build(inst, phase="power", admit_floors=floors)
    model.lp.solve(pulp.HiGHS(msg=False, timeLimit=time_limit_s, gapRel=0.001, threads=1))
    return pulp.value(model.lp.objective) if model.lp.sol_status in (1, 2) else None


def format_table(report: dict) -> str:
    """The human table: one row per size and solver. 'vs ilp' and 'gap' (to the LP bound) only
    where the solver admitted as many jobs per priority as the ILP; 'vs global' compares
    genetic and cells with the global optimum at their own admission. In contention mode the
    rows are the run beside the CPU burners, with its CPU seconds and, in the note, how it
    compares with the run alone."""
    contended = bool(report.get("contention"))
    lines = [
        f"{'GPUs':>5} {'jobs':>5} {'solver':<17} {'seconds':>8} " + (f"{'cpu s':>6} " if contended else "")
        + f"{'power W':>9} {'placed':>6} {'slo_met':>7} {'gap':>6} {'vs ilp':>7} {'vs global':>9}  note",
    ]
    for size, block in report["sizes"].items():
        if contended:
            lines.append(
                f"{size:>5} beside {report['contention']} CPU-burning processes, 1-minute load {block['load_1min']}"
            )
        for key in TABLE_SOLVERS:
            row = block.get(key)
            if row is None:
                continue
            gap = f"{row['gap']:.2%}" if row.get("gap") is not None else "-"
            vs_ilp = f"{row['vs_ilp']:+.2%}" if row.get("vs_ilp") is not None else "-"
            vs_global = (
                f"{row['vs_global_same_admission']:+.2%}" if row.get("vs_global_same_admission") is not None else "-"
            )
            notes = []
            if not row["same_admission"]:
                ilp = block["ilp"]["admitted_per_priority"]
                notes.append(
                    f"admitted {_levels(row['admitted_per_priority'])} vs ilp {_levels(ilp)}: power not comparable"
                )
            if key in REFERENCE_ROWS:
                notes.append(f"{row['status']}, {row['variables']} vars, {row['constraints']} cons")
            elif row["status"] == "fallback":
                notes.append("fallback")
            if row.get("fallback_reason"):
                notes.append(row["fallback_reason"])
            if contended:
                notes.append(_against_quiet(row))
            cpu = f"{row['cpu_seconds']:>6.2f} " if contended else ""
            lines.append(
                f"{size:>5} {block['jobs']:>5} {key:<17} {row['seconds']:>8.2f} {cpu}{row['power_w']:>9.0f} "
                f"{row['placed']:>6} {row['slo_met']:>7} {gap:>6} {vs_ilp:>7} {vs_global:>9}  {'; '.join(notes)}"
            )
        if "cbc_over_highs_time" in block:
            lines.append(f"{size:>5} {'':>5} CBC / HiGHS time: {block['cbc_over_highs_time']:.2f}")
    return "\n".join(lines)


def _against_quiet(row: dict) -> str:
    """How a run beside the CPU burners compares with the same solver's run alone."""
    quiet = row["quiet"]
    if row["same_decision_as_quiet"]:
        return f"decision as alone ({quiet['seconds']:.2f} s)"
    if row["placed_per_priority"] == quiet["placed_per_priority"]:
        return f"admission as alone, power {quiet['power_w']:.0f} W alone"
    return f"ADMITTED {_levels(row['placed_per_priority'])} vs {_levels(quiet['placed_per_priority'])} alone"


def _levels(per_priority: dict) -> str:
    """'p2/p1/p0' counts, e.g. 120/118/480."""
    return "/".join(str(v) for v in per_priority.values())
