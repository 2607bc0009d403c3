"""Inference services in the simulator: the traces, the true latency, how `dedicated` and the
shared loop place replicas, and the report's `services` figures (services.py, serving.py,
service_watch.py)."""
import math

import pytest

from catalog.measurement_record import MeasurementRecord
from scheduler.optimizer.catalog_predictions import CatalogPredictions
from scheduler.serving.forecast import forecast_rate, held_rate
from scheduler.serving.latency import LN_100, p99_ms
from scheduler.simulation.cluster import build_gpus, gpu_types
from scheduler.simulation.engine import Simulation
from scheduler.simulation.jobs import SimJob
from scheduler.simulation.measurements import without_memory
from scheduler.simulation.metrics import policy_metrics
from scheduler.simulation.policies import CATALOG, DEDICATED, NO_SERVICES, Policy
from scheduler.simulation.run import comparison
from scheduler.simulation.scenario import Scenario
from scheduler.simulation.service_rounds import CannotProvision
from scheduler.simulation.service_watch import ServiceWatch
from scheduler.simulation.services import (
    DAY_S,
    SPIKED,
    SPIKE_AT_S,
    SimService,
    request_trace,
    scenario_services,
)
from scheduler.simulation.serving import forecast_samples
from scheduler.simulation.truth import Truth

# S: the service's workload, T: training's; both 10 steps/s alone on a V100. Sharing a GPU, S keeps
# 0.7 of its speed next to T (T keeps 0.6), and any pair of the same workload 0.5 each.
ROWS = [
    MeasurementRecord("S", "v100", 10.0), MeasurementRecord("T", "v100", 10.0),
    MeasurementRecord("S", "v100", 7.0, partner="T"), MeasurementRecord("T", "v100", 6.0, partner="S"),
    MeasurementRecord("S", "v100", 5.0, partner="S"), MeasurementRecord("T", "v100", 5.0, partner="T"),
]
HOURS = 6
SPIKE_S = 3 * 3600.0 + 180.0
SERVICE_KEYS = {"p99_violation_minutes_pct", "mean_gpu_utilization", "energy_kwh", "replicas_mean",
                "spike_rounds_to_adjust", "spike_violated_minutes", "training_energy_per_step_j", "by_service"}


def service(**kwargs) -> SimService:
    """40 requests/s at its peak (20 at its trough, 12 hours away), batches of 8, P99 <= 400 ms:
    at 10 steps/s one replica serves 80 requests/s."""
    values = {"id": "svc", "workload": "S", "batch_size": 8, "bound_ms": 400.0, "peak_rps": 40.0,
              "peak_over_trough": 2.0, "peak_hour": 3.0, "spike_at_s": SPIKE_S, "spike_s": 3600.0}
    return SimService(**{**values, **kwargs})


def training(n: int = 2) -> tuple[SimJob, ...]:
    return tuple(SimJob(f"job-{i}", "T", 0.0, 1, 10.0 * 86400, 3.0) for i in range(n))


def scenario(served=None, v100s: int = 8, jobs=None) -> Scenario:
    span, served = HOURS * 3600.0, served or (service(),)
    return Scenario(
        jobs=training() if jobs is None else jobs, gpus=build_gpus((("v100", v100s),)),
        gpu_types=gpu_types(["v100"]), horizon_s=span, services=tuple(served),
        traces={s.id: request_trace(s, span, seed=0) for s in served},
    )


def run(sc: Scenario, services: str = "shared", sim_class=Simulation):
    policy = Policy(services if services != "shared" else "gogh", "ilp", CATALOG, services=services)
    return sim_class(sc, Truth(ROWS, deviation=0.0, noise=0.0), policy, CatalogPredictions(ROWS)).run()


# ---- the traces and the truth ------------------------------------------------------------------
def test_a_trace_follows_the_day_within_its_noise_and_the_spike_triples_it():
    plain, spiked = service(spike_at_s=None), service()
    quiet, loud = request_trace(plain, DAY_S, seed=3), request_trace(spiked, DAY_S, seed=3)
    assert len(quiet) == 1440
    assert quiet == request_trace(plain, DAY_S, seed=3) != request_trace(plain, DAY_S, seed=4)
    for minute, rate in enumerate(quiet):
        assert abs(math.log(rate / plain.diurnal_rps(minute * 60.0))) < 0.3  # 6 sigma of TRACE_NOISE
    assert plain.diurnal_rps(3 * 3600.0) == pytest.approx(40.0)
    assert plain.diurnal_rps(15 * 3600.0) == pytest.approx(20.0)
    for minute in range(1440):
        inside = SPIKE_S <= minute * 60.0 < SPIKE_S + 3600.0
        assert loud[minute] == pytest.approx(quiet[minute] * (3.0 if inside else 1.0))


def test_the_true_p99_is_the_latency_model_at_the_true_speed_with_the_services_calibration():
    svc = service(calibration=1.25)
    # one batch (0.1 s) plus ln(100) / (80 - 40) s of queueing, x 1.25
    assert svc.true_p99_ms(10.0, 40.0) == pytest.approx(1250.0 * (0.1 + LN_100 / 40.0))
    assert svc.true_p99_ms(10.0, 40.0) == pytest.approx(p99_ms(10.0, 40.0, 8, 1.25))
    assert svc.true_p99_ms(5.0, 40.0) == math.inf  # 40 requests/s at capacity: the queue never drains


def test_the_scenarios_bounds_hold_with_the_margin_on_some_gpu_types_and_not_on_others(reference_records):
    truth = Truth(without_memory(reference_records))
    services = scenario_services(seed=0)
    assert [s.id for s in services if s.spike_at_s is not None] == [SPIKED]
    assert next(s for s in services if s.id == SPIKED).spike_at_s == SPIKE_AT_S
    for s in services:
        assert 0.8 <= s.speed_factor <= 1.2 and 0.9 <= s.calibration <= 1.3
        unloaded = [s.true_p99_ms(truth.throughput(s.workload, g, 1, True) * s.speed_factor, 0.0)
                    for g in truth.gpu_types]
        assert min(unloaded) < s.bound_ms / 1.2 < max(unloaded), s.id  # within the margin on some types only
    assert scenario_services(seed=0) == services != scenario_services(seed=1)


def test_a_minute_without_a_running_replica_is_violated():
    svc = service(spike_at_s=None)
    watch = ServiceWatch((svc,), {"svc": (40.0, 40.0)}, round_s=360.0)
    watch.segment(0.0, 120.0, [])
    assert watch.violated["svc"] == {0: True, 1: True}
    assert watch.metrics()["p99_violation_minutes_pct"] == 100.0


# ---- the policies ------------------------------------------------------------------------------
class Audited(Simulation):
    """Records, at every stretch of time, the GPUs of each job and the replicas placed."""

    def _advance(self, t0, t1, failures):
        self.seen = getattr(self, "seen", [])
        placed = {i: s.placement.gpu_ids for i, s in self.active.items() if s.placement}
        replicas = sum(1 for i in placed if self.active[i].job.service)
        self.seen.append((t0, placed, replicas, {i: s.job.min_throughput for i, s in self.active.items()}))
        return super()._advance(t0, t1, failures)


def test_dedicated_replicas_never_share_their_gpus():
    sim = Audited(scenario(jobs=training(6), v100s=4), Truth(ROWS, deviation=0.0, noise=0.0),
                  Policy("dedicated", "ilp", CATALOG, services=DEDICATED), CatalogPredictions(ROWS))
    result = sim.run()
    for _, placed, replicas, _ in sim.seen:
        # provisioned for its peak of 40 requests/s with the rate headroom (48/s): two GPUs at 10 steps/s
        assert replicas == 2
        replica_gpus = {g for i, gpus in placed.items() if i.startswith("svc-") for g in gpus}
        others = {g for i, gpus in placed.items() if not i.startswith("svc-") for g in gpus}
        assert replica_gpus and not replica_gpus & others
    assert policy_metrics(result)["services"]["replicas_mean"] == pytest.approx(2.0)


def test_dedicated_takes_the_next_fastest_type_where_the_fastest_has_too_few_free_gpus():
    """One V100 free, a peak that needs two there: an operator provisions the service on P100s
    instead, where S runs at 5 steps/s and its peak needs 8 of them."""
    rows = [*ROWS, MeasurementRecord("S", "p100", 5.0), MeasurementRecord("T", "p100", 5.0)]
    sc = Scenario(jobs=(), gpus=build_gpus((("v100", 1), ("p100", 10))), gpu_types=gpu_types(["v100", "p100"]),
                  horizon_s=3600.0, services=(service(spike_at_s=None),),
                  traces={"svc": request_trace(service(spike_at_s=None), 3600.0, seed=0)})
    sim = Audited(sc, Truth(rows, deviation=0.0, noise=0.0), Policy("dedicated", "ilp", CATALOG, services=DEDICATED),
                  CatalogPredictions(rows))
    sim.run()
    replica_gpus = {g for _, placed, _, _ in sim.seen for i, gpus in placed.items() if i.startswith("svc-")
                    for g in gpus}
    assert replica_gpus and all(g.startswith("p100") for g in replica_gpus)
    assert len(replica_gpus) == 8


def test_dedicated_that_no_type_can_hold_says_what_the_service_needs():
    sc = Scenario(jobs=(), gpus=build_gpus((("v100", 1),)), gpu_types=gpu_types(["v100"]), horizon_s=3600.0,
                  services=(service(spike_at_s=None),), traces={"svc": request_trace(service(spike_at_s=None), 3600.0,
                                                                                      seed=0)})
    with pytest.raises(CannotProvision, match=r"svc's peak: it needs 2 v100 \(1 free\)"):
        run(sc, services=DEDICATED)


def test_the_shared_loop_adds_replicas_after_a_spike_and_the_p99_holds_again_within_two_rounds():
    sim = Audited(scenario(), Truth(ROWS, deviation=0.0, noise=0.0), Policy("gogh", "ilp", CATALOG),
                  CatalogPredictions(ROWS))
    result = sim.run()
    before = max(replicas for t, _, replicas, _ in sim.seen if t < SPIKE_S)
    after = max(replicas for t, _, replicas, _ in sim.seen if SPIKE_S < t < SPIKE_S + 3600.0)
    assert after > before
    figures = policy_metrics(result)["services"]
    assert figures["spike_rounds_to_adjust"] is not None and figures["spike_rounds_to_adjust"] <= 2
    assert figures["p99_violation_minutes_pct"] < 5.0


def test_a_rising_t_min_moves_the_training_partner_off_the_replica():
    """At the trough one replica needs ~6.5 steps/s and shares with training (7 of 10 there);
    as traffic rises its T_min passes 7, and the training job leaves its GPU, not the replica."""
    sim = Audited(scenario(served=(service(spike_at_s=None, peak_hour=5.0),), jobs=training(1), v100s=4),
                  Truth(ROWS, deviation=0.0, noise=0.0), Policy("gogh", "ilp", CATALOG), CatalogPredictions(ROWS))
    sim.run()
    shared = [(t, placed) for t, placed, _, _ in sim.seen if placed.get("job-0") in
              {gpus for i, gpus in placed.items() if i.startswith("svc-")}]
    assert shared, "the replica never shared with the training job"
    for t, placed, _, t_mins in sim.seen:
        replica_gpus = {gpus: i for i, gpus in placed.items() if i.startswith("svc-")}
        host = replica_gpus.get(placed.get("job-0"))
        if host is not None:
            assert t_mins[host] <= 7.0, t


def test_the_report_has_the_services_figures_and_none_without_services():
    shared = policy_metrics(run(scenario()))
    alone = policy_metrics(run(scenario(), services=NO_SERVICES))
    dedicated = policy_metrics(run(scenario(), services=DEDICATED))
    assert SERVICE_KEYS <= set(shared["services"]) and SERVICE_KEYS <= set(dedicated["services"])
    assert alone["services"] is None
    assert shared["services"]["energy_kwh"] > 0 and 0 < shared["services"]["mean_gpu_utilization"] <= 1
    assert shared["energy_kwh"] > alone["energy_kwh"]  # the replicas' GPUs are in the run's energy
    ratios = comparison({"gogh": shared, "dedicated": dedicated, "gogh_no_services": alone})
    assert ratios["gogh_serving_utilization_over_dedicated"] == pytest.approx(
        shared["services"]["mean_gpu_utilization"] / dedicated["services"]["mean_gpu_utilization"], abs=1e-4)
    assert ratios["gogh_training_energy_per_step_over_no_services"] == pytest.approx(
        shared["services"]["training_energy_per_step_j"] / alone["energy_per_step_j"], abs=1e-4)
    # the oracle's pair, read from its own rows (here the same runs under the oracle's names)
    oracle = comparison({"oracle": shared, "oracle_no_services": alone})
    assert oracle["oracle_training_energy_per_step_over_no_services"] == pytest.approx(
        ratios["gogh_training_energy_per_step_over_no_services"])
    assert oracle["gogh_training_energy_per_step_over_no_services"] is None


def test_a_bound_no_gpu_is_predicted_to_meet_still_runs_its_replicas_below_the_best_speed():
    """At 10 steps/s the unloaded P99 of batches of 8 is (1 + ln 100 / 8) x 100 ms = 158 ms:
    a 150 ms bound is beyond every GPU, yet the service runs, its replicas asked for 85 % of the
    fastest (measured) speed: no GPU would take a higher T_min, and a type planned at a board's
    learnt speed below its prediction would not take the prediction itself."""
    sim = Audited(scenario(served=(service(bound_ms=150.0, spike_at_s=None, max_replicas=2),), jobs=()),
                  Truth(ROWS, deviation=0.0, noise=0.0), Policy("gogh", "ilp", CATALOG), CatalogPredictions(ROWS))
    result = sim.run()
    assert all(replicas == 2 for t, _, replicas, _ in sim.seen if t >= 360.0)
    assert all(t_min == pytest.approx(8.5) for t, _, _, t_mins in sim.seen for t_min in t_mins.values())
    assert policy_metrics(result)["services"]["p99_violation_minutes_pct"] == 100.0


def test_the_loop_reads_only_the_samples_the_forecast_needs_and_gets_the_same_answer():
    history = [(minute * 60.0, 100.0 + (minute % 1440) / 10.0 + (minute // 1440) * 5.0) for minute in range(3 * 1440)]
    for t in (3600.0, 1.5 * DAY_S, 2 * DAY_S + 600.0, 3 * DAY_S - 60.0):
        assert forecast_rate(forecast_samples(history, t, 360.0), t, 360.0) == forecast_rate(history, t, 360.0)
    steps = [(minute * 60.0, 300.0 if minute % 90 < 45 else 50.0) for minute in range(2 * 1440)]
    # 4 minutes after a fall the wait still holds the rate before it; 44 minutes after, not
    for t, held in ((45 * 60.0 + 240, 300.0), (1.5 * DAY_S + 45 * 60.0 + 240, 300.0), (2 * DAY_S - 60.0, 50.0)):
        assert held_rate(forecast_samples(steps, t, 360.0), t) == held_rate(steps, t) == held
    assert len(forecast_samples(history, 2 * DAY_S + 600.0, 360.0)) < 200


def test_a_services_run_is_the_same_run_again():
    first, again = (policy_metrics(run(scenario()))["services"] for _ in range(2))
    assert first == again


def test_the_loop_learns_a_slower_replica_as_speed_and_an_overhead_as_latency():
    """The truth's speed factor 0.7 (predicted 10 steps/s, truly 7) is learnt as the replicas'
    speed, not as the latency factor; an overhead of 1.25 at the predicted speed as latency."""
    learnt = {}
    for name, truth in (("slower", {"speed_factor": 0.7}), ("overhead", {"calibration": 1.25})):
        sim = Simulation(scenario(served=(service(spike_at_s=None, peak_rps=60.0, **truth),), jobs=()),
                         Truth(ROWS, deviation=0.0, noise=0.0), Policy("gogh", "ilp", CATALOG),
                         CatalogPredictions(ROWS))
        sim.run()
        learnt[name] = sim.serving.state["svc"].calibration
    assert learnt["slower"].speed < 0.85 and learnt["slower"].latency == pytest.approx(1.0, abs=0.2)
    assert learnt["overhead"].speed == pytest.approx(1.0, abs=0.1)
    assert learnt["overhead"].latency == pytest.approx(1.25, abs=0.15)


class _Recording(CatalogPredictions):
    """The catalog's numbers, taking telemetry as a learning policy's predictions do (and recording it)."""

    def __init__(self, rows):
        super().__init__(rows)
        self.seen: list[tuple[str, str | None]] = []

    def observe(self, workload, gpu_type, num_gpus, consolidated, throughput, partner=None) -> bool:
        self.seen.append((workload, partner))
        return False

    def observations(self, workload) -> int:
        return 0

    def throughput(self, workload, gpu_type, num_gpus, consolidated, partners=()) -> float | None:
        return self.tau(workload, gpu_type, num_gpus, consolidated)


def test_a_replicas_rate_is_no_measurement_of_its_workload_or_its_board():
    """A replica at 0.7 of its workload's speed (its service's own) teaches neither the workload's
    estimate (P2) nor its board's learnt speed, as in the control plane; training jobs beside it are
    measured."""
    served = (service(spike_at_s=None, speed_factor=0.7),)
    alone = _Recording(ROWS)
    sim = Simulation(scenario(served=served, jobs=()), Truth(ROWS, deviation=0.0, noise=0.0),
                     Policy("gogh", "ilp", CATALOG), alone)
    result = sim.run()
    assert policy_metrics(result)["services"]["replicas_mean"] > 0  # replicas ran, unmeasured
    assert alone.seen == []
    assert sum(sim.watch.measured.values()) == 0
    beside = _Recording(ROWS)
    Simulation(scenario(served=served), Truth(ROWS, deviation=0.0, noise=0.0), Policy("gogh", "ilp", CATALOG),
               beside).run()
    assert beside.seen and {workload for workload, _ in beside.seen} == {"T"}
