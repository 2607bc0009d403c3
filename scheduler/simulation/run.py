"""One evaluation: the scenario, every policy on it, the report and its table."""
import random
import time
from collections import Counter
from dataclasses import asdict

import torch

from catalog.predictors import NET_ARCHITECTURES, PerformancePredictor, build_catalog
from scheduler.optimizer.catalog_predictions import CatalogPredictions
from scheduler.optimizer.exploration import ExplorationSettings
from scheduler.optimizer.problem import SolverSettings

from .boards import Boards
from .checkpoints import CHECKPOINT_INTERVAL_S, NEVER_CHECKPOINTS, restart_overheads, with_checkpoints
from .cluster import DEFAULT_LAYOUT, GPUS_PER_SERVER, build_gpus, gpu_types
from .engine import LEARNING_CURVE_MAX, Simulation
from .explore import Explorer
from .health_signals import HealthSignals
from .jobs import generate_jobs
from .learned import SimulatedLearning
from .measurements import without_memory
from .metrics import learning_curve, policy_metrics
from .modern import Campaign, campaign_gpus, suite_results
from .policies import CATALOG, LEARNED, POLICIES, TRUTH
from .scenario import Failure, Scenario
from .services import DAY_S, request_trace, scenario_services
from .tenants import DEFAULT_HALF_LIFE_H, MULTI_TENANT, MULTI_TENANT_QUOTAS, with_tenants
from .trace import trace_jobs
from .truth import Truth

#: The production default (settings.GOGH_PREDICTOR_ARCHITECTURE); `simulate --architecture` picks another.
DEFAULT_ARCHITECTURE = "structured"

#: The default scenario: about 100 s of CPU on one core (5 min wall on 2 cores shared with
#: other work), see docs/simulation.md.
DEFAULT_JOBS = 300
DEFAULT_JOBS_PER_HOUR = 3.0
#: The ILP's worth of surplus throughput (W per unit of relative surplus over T_min, capped at
#: 1): with 0 it would run every job at just above T_min on the lowest-power GPU, which costs
#: more energy per step than a faster GPU finishing sooner (see docs/simulation.md).
THROUGHPUT_VALUE_W = 100.0
#: The ILP stops each integer program at this many branch-and-bound nodes instead of a CPU-time
#: limit (SolverSettings.node_limit), so that a run's figures do not depend on what else runs on
#: the machine: at 8 jobs per hour with tenants, 2 of 736 programs reached the 10 s limit on a
#: loaded machine and the run's figures moved; the most any finished program needed was 135.
NODE_LIMIT = 200
#: The fast-decaying boards (--ageing) are drawn among the first two servers of the layout's last
#: (fastest) type: the solvers fill a type's GPUs in id order, so these run jobs under any load,
#: and a board that never runs a job cannot be learnt by any telemetry (docs/simulation.md).
FAST_DECAY_POOL = 2 * GPUS_PER_SERVER
#: Exploration as production runs it: the optimiser's defaults (docs/exploration.md).
EXPLORATION = ExplorationSettings()
#: The services+training scenario (`--services`, docs/simulation.md): a smaller cluster, two days
#: of traffic, and fewer training arrivals, so that every policy runs in about a minute.
SERVICES_LAYOUT = (("k80", 8), ("p100", 12), ("v100", 12))
SERVICES_HORIZON_S = 2 * DAY_S
SERVICES_JOBS = 48
SERVICES_JOBS_PER_HOUR = 1.2


def build_scenario(truth: Truth, *, jobs: int = DEFAULT_JOBS, seed: int = 0, trace: str | None = None,
                   jobs_per_hour: float = DEFAULT_JOBS_PER_HOUR, layout=DEFAULT_LAYOUT, failures=(),
                   throughput_value_w: float = THROUGHPUT_VALUE_W, campaign: bool = False, tenants: bool = False,
                   half_life_h: float = DEFAULT_HALF_LIFE_H, gpu_variation: float = 0.0,
                   ageing: bool = False, services: bool = False, health: bool = False) -> Scenario:
    """`campaign`: one server of each type runs the profiling suite first (modern.py);
    `tenants`: the multi-tenant scenario (tenants.py), fair share halving every `half_life_h`;
    `gpu_variation`, `ageing`: the boards' spread and ageing (boards.py); `services`: the
    inference services beside the jobs (services.py) over SERVICES_HORIZON_S, the run's end;
    `health`: boards whose health signals precede their failure, and one braked (health_signals.py)."""
    job_list = (
        trace_jobs(trace, truth, seed=seed) if trace
        else generate_jobs(truth, count=jobs, jobs_per_hour=jobs_per_hour, seed=seed)
    )
    if tenants:
        job_list = with_tenants(job_list, seed)
    gpus = build_gpus(layout)
    shares = {t.slug: t.shares for t in MULTI_TENANT} if tenants else None
    served = scenario_services(seed) if services else ()
    span_s = max((j.arrival_s for j in job_list), default=0.0)
    pool = [g.id for g in gpus if g.gpu_type == layout[-1][0]][:FAST_DECAY_POOL]
    signals = HealthSignals(pool, seed=seed, span_s=span_s) if health else None
    failures = (*failures, *(Failure(t, gpu) for t, gpu in (signals.failures if signals else ())))
    missing = sorted({s.workload for s in served} - set(truth.workloads()))
    if missing:
        raise ValueError(f"the services scenario serves {', '.join(missing)}, which the truth data does not measure")
    return Scenario(
        services=served, traces={s.id: request_trace(s, SERVICES_HORIZON_S, seed) for s in served},
        horizon_s=SERVICES_HORIZON_S if services else None,
        **({"tenants": shares, "quotas": MULTI_TENANT_QUOTAS} if tenants else {}),
        half_life_s=half_life_h * 3600.0,
        jobs=with_checkpoints(job_list, seed),
        gpus=gpus,
        gpu_types=gpu_types([name for name, _ in layout]),
        settings=SolverSettings(seed=seed, throughput_value_w=throughput_value_w, node_limit=NODE_LIMIT),
        failures=tuple(failures),
        restart_overhead_s=restart_overheads(truth.workloads(), seed),
        campaign=Campaign(campaign_gpus(gpus, [name for name, _ in layout])) if campaign else None,
        boards=Boards([g.id for g in gpus], seed=seed, variation=gpu_variation, ageing=ageing, span_s=span_s,
                      fast_candidates=pool, signals=signals),
    )


def fit_predictor(catalog_records, *, architecture: str = DEFAULT_ARCHITECTURE, seed: int,
                  quick: bool = False) -> PerformancePredictor:
    """The predictor `gogh` starts from, fitted on the catalog; `quick` shrinks a network (tests)."""
    torch.set_num_threads(1)
    params = {"epochs": 6, "draws": 1, "hidden": 16} if quick and architecture in NET_ARCHITECTURES else {}
    return PerformancePredictor(architecture=architecture, seed=seed, **params).fit(build_catalog(catalog_records))


def run_all(scenario: Scenario, truth: Truth, truth_records, catalog_records, *, seed: int = 0, quick: bool = False,
            architecture: str = DEFAULT_ARCHITECTURE, policies=POLICIES, log=print,
            exploration: ExplorationSettings | None = EXPLORATION) -> dict:
    """Every policy on the scenario. The learning policies explore with `exploration` (None: they
    do not, `simulate --no-explore`); the oracle and the baselines never do."""
    started = time.perf_counter()
    catalog = CatalogPredictions(without_memory(catalog_records))
    features = {}
    model = None
    if any(p.predictions == LEARNED for p in policies):
        model = fit_predictor(catalog_records, architecture=architecture, seed=seed, quick=quick)
        known = build_catalog(truth_records)
        features = dict(zip(known.workloads, known.features))
        features.update(zip(model.catalog_.workloads, model.catalog_.features))
        log(f"predictor fitted: {time.perf_counter() - started:.1f} s")
    report = {"policies": {}, "learning_curve": None}
    after = _after_campaign(scenario, truth, catalog_records, seed=seed, quick=quick, architecture=architecture)
    for policy in policies:
        t = time.perf_counter()
        predictions = {
            LEARNED: lambda: SimulatedLearning(model, catalog, features, gpu_types=scenario.gpu_types),
            TRUTH: lambda: truth.predictions(scenario.gpu_types),
            CATALOG: lambda: catalog,
        }[policy.predictions]()
        explorer = Explorer(exploration, catalog) if exploration and policy.predictions == LEARNED else None
        run = Simulation(scenario, truth, policy, predictions, seed=seed, explorer=explorer,
                         after_campaign=after and after(policy, explorer)).run()
        report["policies"][policy.name] = {**policy_metrics(run), "seconds": round(time.perf_counter() - t, 1)}
        if policy.name == "gogh":
            report["learning_curve"] = learning_curve(run.curve, LEARNING_CURVE_MAX, run.stranded_curve)
        log(f"{policy.name}: {time.perf_counter() - t:.1f} s")
    report["comparison"] = comparison(report["policies"])
    report["seconds"] = round(time.perf_counter() - started, 1)
    return report


def _after_campaign(scenario: Scenario, truth: Truth, catalog_records, *, seed: int, quick: bool, architecture: str):
    """None without a campaign; else policy, explorer -> what a policy's predictions become when
    the campaign ends: the catalog with the suite's measurements (the baselines' numbers), and
    for the learning policies a predictor fitted again on it (fitted once, shared)."""
    if scenario.campaign is None:
        return None
    rows = [*catalog_records, *suite_results(truth, random.Random(f"campaign:{seed}"), sorted(scenario.gpu_types))]
    catalog = CatalogPredictions(without_memory(rows))
    fitted = []

    def for_policy(policy, explorer):
        def after(predictions):
            if policy.predictions == CATALOG:
                return catalog
            if policy.predictions == LEARNED:
                if not fitted:
                    fitted.append(fit_predictor(rows, architecture=architecture, seed=seed, quick=quick))
                predictions.refit(fitted[0], catalog)
                if explorer is not None:
                    explorer.catalog = catalog
            return predictions
        return after

    return for_policy


def comparison(p: dict) -> dict:
    """The targets' ratios, where both sides exist."""
    def ratio(a, b, key):
        if a in p and b in p and p[a][key] and p[b][key]:
            return round(p[a][key] / p[b][key], 4)
        return None

    return {
        "gogh_energy_over_oracle": ratio("gogh", "oracle", "energy_kwh"),
        "gogh_energy_per_step_over_no_power_limit": ratio("gogh", "gogh_no_power_limit", "energy_per_step_j"),
        "gogh_energy_per_step_over_round_robin": ratio("gogh", "round_robin", "energy_per_step_j"),
        "gogh_jct_over_round_robin": ratio("gogh", "round_robin", "avg_jct_s"),
        "adaptive_over_fixed_weight_energy_per_step": ratio("gogh", "gogh_fixed_weight", "energy_per_step_j"),
        "gogh_energy_per_step_over_gavel_max_min": ratio("gogh", "gavel_max_min", "energy_per_step_j"),
        "gogh_tenant_jain_minus_gavel_max_min": difference(p, "gogh", "gavel_max_min", "tenant_jain"),
        "gogh_max_ftf_over_gavel_ftf": ratio("gogh", "gavel_ftf", "max_finish_time_fairness"),
        **service_comparison(p),
    }


def service_comparison(p: dict) -> dict:
    """The services targets' ratios (docs/simulation.md), where both sides served or ran."""
    def served(name, key):
        return (p.get(name, {}).get("services") or {}).get(key)

    def ratio(a, b):
        return round(a / b, 4) if a and b else None

    return {
        "gogh_serving_utilization_over_dedicated": ratio(served("gogh", "mean_gpu_utilization"),
                                                         served("dedicated", "mean_gpu_utilization")),
        "gogh_training_energy_per_step_over_no_services": ratio(
            served("gogh", "training_energy_per_step_j"), p.get("gogh_no_services", {}).get("energy_per_step_j")),
        "oracle_training_energy_per_step_over_no_services": ratio(
            served("oracle", "training_energy_per_step_j"), p.get("oracle_no_services", {}).get("energy_per_step_j")),
    }


def difference(p: dict, a: str, b: str, key: str) -> float | None:
    if a in p and b in p and p[a][key] is not None and p[b][key] is not None:
        return round(p[a][key] - p[b][key], 4)
    return None


def scenario_summary(scenario: Scenario, **extra) -> dict:
    counts = {}
    for g in scenario.gpus:
        counts[g.gpu_type] = counts.get(g.gpu_type, 0) + 1
    return {
        "gpus": counts,
        "jobs": len(scenario.jobs),
        "round_s": scenario.round_s,
        "never_checkpoint": sum(1 for j in scenario.jobs if j.checkpoint_interval_s is None),
        "checkpoint_interval_s": {"never": NEVER_CHECKPOINTS, "uniform": list(CHECKPOINT_INTERVAL_S)},
        "restart_overhead_s": {w: round(s, 1) for w, s in scenario.restart_overhead_s.items()},
        "throughput_value_w": scenario.settings.throughput_value_w,
        "migration_cost_w": scenario.settings.migration_cost_w,
        "move_cooldown_s": scenario.settings.move_cooldown_s,
        "move_hysteresis": scenario.settings.move_hysteresis,
        "max_preemptions_per_hour": scenario.settings.max_preemptions_per_hour,
        "max_moves_per_job": scenario.settings.max_moves_per_job,
        "last_arrival_s": max((j.arrival_s for j in scenario.jobs), default=0.0),
        "failures": [[f.time_s, f.gpu_id] for f in scenario.failures],
        "power_limits_w": {name: list(t.power_limits_w) for name, t in scenario.gpu_types.items()},
        "gpu_variation": scenario.boards.variation,
        "ageing": scenario.boards.ageing,
        "fast_decay_gpus": {g: d.drop for g, d in sorted(scenario.boards.fast.items())},
        "health_signals": None if scenario.boards.signals is None else {
            "warned": {g: [round(w.warns_s, 1), round(w.fails_s, 1)]
                       for g, w in sorted(scenario.boards.signals.warned.items())},
            "throttled": scenario.boards.signals.throttled,
            "throttled_s": [round(s, 1) for s in scenario.boards.signals.throttle_s],
        },
        "tenants": dict(scenario.tenants),
        "quotas": [[q.tenant, q.gpu_type, q.gpus] for q in scenario.quotas],
        "half_life_h": scenario.half_life_s / 3600.0,
        "jobs_by_tenant": dict(sorted(Counter(j.tenant for j in scenario.jobs).items())),
        "services": [asdict(s) for s in scenario.services],
        "horizon_s": scenario.horizon_s,
        **extra,
    }


CURVE_SHOWN = (0, 1, 2, 5, 10, 20)


def _hours(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 3600:.1f}"


def format_table(report: dict) -> str:
    """The human table the command prints and the README carries."""
    lines = [f"{'policy':<18} {'energy kWh':>10} {'J/step':>7} {'SLO viol':>8} {'JCT h':>6} {'makespan h':>10} "
             f"{'Jain':>6} {'done':>9} {'strand':>6} {'solves':>6} {'migr':>6} {'moves':>6} {'preempt':>7} {'lost':>6} "
             f"{'tJain':>6} {'maxFTF':>7} {'quotaGPUh':>9} {'sec':>6}"]
    for name, m in report["policies"].items():
        done = f"{m['completed']}/{m['jobs']}"
        lost = m["lost_gpu_hours"] / m["busy_gpu_hours"] if m["busy_gpu_hours"] else 0.0
        lines.append(f"{name:<18} {m['energy_kwh']:>10.1f} {m['energy_per_step_j'] or 0:>7.2f} "
                     f"{m['slo_violation']:>8.2%} {_hours(m['avg_jct_s']):>6} {_hours(m['makespan_s']):>10} "
                     f"{m['jain_fairness'] or 0:>6.3f} {done:>9} {m['stranded_jobs']:>6} {m['solves']:>6} "
                     f"{m['migrations']:>6} "
                     f"{m['moves']:>6} {m['preemptions']:>7} {lost:>6.2%} {m['tenant_jain'] or 0:>6.3f} "
                     f"{m['max_finish_time_fairness'] or 0:>7.2f} {m['quota_violations'] / 3600:>9.1f} "
                     f"{m['seconds']:>6}")
    curve = report.get("learning_curve")
    if curve:
        shown = [f"{n}: {curve[str(n)]['mape']:.1%}" for n in CURVE_SHOWN if curve[str(n)]["mape"] is not None]
        lines += ["", "gogh prediction MAPE of placed jobs' throughput by observations: " + ", ".join(shown)]
        stranded = [f"{n}: {p['stranded']}" + (f" ({p['stranded_mape']:.0%})" if p["stranded_mape"] else "")
                    for n, p in curve.items() if p["stranded"]]
        lines.append("gogh stranded jobs (rounds x jobs, their MAPE) by observations: "
                     + (", ".join(stranded) or "none"))
    for name, m in report["policies"].items():
        if m.get("power_limit_share") or m.get("prediction_mape_by_gpu_age"):
            ages = ", ".join(f"{b}: {e:.1%}" for b, e in m["prediction_mape_by_gpu_age"].items()) or "-"
            lines.append(f"{name}: power-limit share {m['power_limit_share']:.1%}; per-board MAPE by board age: "
                         f"{ages}; slow board flagged after {m['slow_gpu_flagged_after_h']} h")
    lines += [f"{name}: power-limit speed MAPE {m['power_limit_speed_mape']['all']:.1%} over the run, "
              f"{m['power_limit_speed_mape']['late'] or 0:.1%} after the middle of the arrivals "
              f"({m['power_limit_speed_mape']['rounds']} job-rounds)"
              for name, m in report["policies"].items() if m.get("power_limit_speed_mape")]
    if report.get("scenario", {}).get("health_signals"):
        lines += [f"{name}: work lost on failed boards {m['failed_gpu_work_lost_gpu_h']} GPU-h; at risk flagged "
                  f"{m['at_risk_flagged_before_failure_h']} h before failure" for name, m in report["policies"].items()]
    lines += _service_lines(report)
    lines += [f"{key}: {value}" for key, value in report.get("comparison", {}).items()]
    return "\n".join(lines)


def _service_lines(report: dict) -> list[str]:
    served = {name: m["services"] for name, m in report["policies"].items() if m.get("services")}
    if not served:
        return []
    lines = ["", f"{'services':<18} {'P99 viol %':>10} {'GPU util':>8} {'kWh':>8} {'replicas':>8} {'spike rounds':>12} "
                 f"{'train J/step':>12}"]
    for name, m in served.items():
        spike = "-" if m["spike_rounds_to_adjust"] is None else str(m["spike_rounds_to_adjust"])
        lines.append(f"{name:<18} {m['p99_violation_minutes_pct'] or 0:>10.2f} {m['mean_gpu_utilization'] or 0:>8.1%} "
                     f"{m['energy_kwh']:>8.1f} {m['replicas_mean'] or 0:>8.2f} {spike:>12} "
                     f"{m['training_energy_per_step_j'] or 0:>12.2f}")
    return lines
