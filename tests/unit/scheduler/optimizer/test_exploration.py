"""Exploration (scheduler/optimizer/exploration.py): which stranded jobs get a probe, where, and
why the others do not. Chances are worked out by hand in each test's docstring."""
import math
from dataclasses import dataclass, field, replace

import pytest

from scheduler.optimizer.exploration import (
    BUDGET,
    CHANCE_LOW,
    NO_PROBE_REASON,
    OFF,
    PROBES_USED,
    PROBE_REASON,
    ExplorationSettings,
    Probe,
    ProbeHistory,
    ThroughputBelief,
    beliefs,
    chance_to_meet,
    choose_probes,
    no_probe_reasons,
    stranded,
    with_probes,
)

from .factory import TablePredictions, gpu_type, job, node, problem

OLD, NEW, HOT = gpu_type("old", tdp=300), gpu_type("new", tdp=100), gpu_type("hot", tdp=400)
SETTINGS = ExplorationSettings()


@dataclass
class DoubtfulPredictions(TablePredictions):
    """TablePredictions with doubts[(workload, type, k, consolidated)] = (log_sd, measured);
    a configuration without one is measured and exact."""

    doubts: dict = field(default_factory=dict)

    def uncertainty(self, workload, gpu_type, num_gpus, consolidated):
        return self.doubts.get((workload, gpu_type, num_gpus, consolidated or num_gpus == 1), (0.0, True))


def phi_upper(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2))


def catalog_is_unsure(jobs=None, gpus=None, **settings):
    """Workload w, T_min 10: old (measured, exact) 6/s; new (a datasheet guess) 7/s with log-sd
    0.5; hot (a guess) 5/s with log-sd 0.5. Nothing reaches 10: the job is stranded. Chance on
    new: 1 - Phi(ln(10/7)/0.5) = 1 - Phi(0.713) = 0.238; on hot 1 - Phi(1.386) = 0.083; on old 0."""
    preds = DoubtfulPredictions(
        taus={("w", "old", 1, True): 6, ("w", "new", 1, True): 7, ("w", "hot", 1, True): 5},
        doubts={("w", "new", 1, True): (0.5, False), ("w", "hot", 1, True): (0.5, False)},
    )
    jobs = jobs or [job("j", "w", tmin=10)]
    gpus = gpus or node("old", "o", 2) + node("new", "n", 2) + node("hot", "h", 2)
    return problem(jobs, gpus, [OLD, NEW, HOT], preds, **settings)


def test_chance_is_the_lognormal_tail_above_t_min():
    belief = ThroughputBelief("new", 1, True, tau=10.0, log_sd=0.5, measured=False)
    assert chance_to_meet(belief, 10.0) == pytest.approx(0.5)
    assert chance_to_meet(belief, 10.0 * math.exp(0.5)) == pytest.approx(phi_upper(1.0))
    assert chance_to_meet(belief, 10.0 * math.exp(-1.0)) == pytest.approx(phi_upper(-2.0))


def test_a_prediction_without_spread_is_certain_unless_telemetry_disagreed():
    """log-sd 0: the chance is 1 at or above T_min, 0 below. Disagreed: the spread becomes
    sqrt(0^2 + 0.5^2) = 0.5, so 6/s against T_min 10 has 1 - Phi(ln(10/6)/0.5) = 0.153."""
    exact = ThroughputBelief("old", 1, True, tau=6.0, log_sd=0.0, measured=True)
    assert chance_to_meet(exact, 10.0) == 0.0
    assert chance_to_meet(exact, 6.0) == 1.0
    assert chance_to_meet(exact, 10.0, disagreed=True) == pytest.approx(phi_upper(math.log(10 / 6) / 0.5))


def test_beliefs_cover_pending_jobs_on_types_that_fit():
    """Running jobs and probes have no beliefs; only_gpu_type and memory narrow the types."""
    p = catalog_is_unsure(jobs=[
        job("j", "w", tmin=10), job("r", "w", tmin=10, current=(["o-0"], ())),
        job("only", "w", tmin=10),
    ])
    p = replace(p, jobs=(p.jobs[0], p.jobs[1], replace(p.jobs[2], only_gpu_type="new")),
                gpu_types={**p.gpu_types, "hot": gpu_type("hot", tdp=400, memory=8.0)})
    p = replace(p, jobs=p.jobs + (replace(p.jobs[0], id="big", memory_gb=12.0),))
    found = beliefs(p, p.predictions)
    assert set(found) == {"j", "only", "big"}
    assert {(b.gpu_type, b.tau, b.log_sd, b.measured) for b in found["j"]} == {
        ("old", 6, 0.0, True), ("new", 7, 0.5, False), ("hot", 5, 0.5, False)}
    assert [b.gpu_type for b in found["only"]] == ["new"]
    assert sorted(b.gpu_type for b in found["big"]) == ["new", "old"]


def test_an_uncertain_stranded_job_gets_a_probe_on_the_most_promising_type():
    p = catalog_is_unsure()
    found = beliefs(p, p.predictions)
    assert stranded(p, found) == ["j"]
    probes = choose_probes(p, found, {}, now=1000.0, settings=SETTINGS)
    assert probes == [Probe("j", "new", 1, pytest.approx(phi_upper(math.log(10 / 7) / 0.5)), 7, 1600.0)]
    assert no_probe_reasons(p, found, {}, 1000.0, SETTINGS) == {}
    text = PROBE_REASON.format(gpu_type="new", predicted=7, t_min=10, chance=probes[0].chance, until="12:10")
    assert "new until 12:10" in text and "24%" in text


def test_a_confident_stranded_job_gets_no_probe_and_is_told_why():
    """Measured 6/s with no spread against T_min 10: chance 0 everywhere."""
    preds = DoubtfulPredictions(taus={("w", "old", 1, True): 6})
    p = problem([job("j", "w", tmin=10)], node("old", "o", 2), [OLD], preds)
    found = beliefs(p, preds)
    assert stranded(p, found) == ["j"]
    assert choose_probes(p, found, {}, 0.0, SETTINGS) == []
    why = no_probe_reasons(p, found, {}, 0.0, SETTINGS)["j"]
    assert why == NO_PROBE_REASON.format(why=CHANCE_LOW.format(t_min=10, chance=0.0, gpu_type="old", min_chance=0.05))
    assert "0.0%" in why and "below the 5%" in why


def test_telemetry_disagreeing_with_the_catalog_makes_a_confident_job_worth_a_probe():
    preds = DoubtfulPredictions(taus={("w", "old", 1, True): 6})
    p = problem([job("j", "w", tmin=10)], node("old", "o", 2), [OLD], preds)
    probes = choose_probes(p, beliefs(p, preds), {}, 0.0, SETTINGS, disagreed={"w"})
    assert [(x.gpu_type, round(x.chance, 3)) for x in probes] == [("old", round(phi_upper(math.log(10 / 6) / 0.5), 3))]


def test_a_job_that_is_served_is_not_stranded():
    p = catalog_is_unsure(jobs=[job("j", "w", tmin=5)])
    assert stranded(p, beliefs(p, p.predictions)) == []


def test_a_tight_job_held_off_an_unmeasured_type_by_the_margin_is_stranded_and_probed_there():
    """new predicts 7/s (log-sd 0.5), T_min 6.5: its sure share 7 e^-0.5 = 4.2 is below, old's
    measured 6 too, so no solver places it; chance on new 1 - Phi(ln(6.5/7)/0.5) = 0.559."""
    p = catalog_is_unsure(jobs=[job("j", "w", tmin=6.5)])
    found = beliefs(p, p.predictions)
    assert stranded(p, found) == ["j"]
    assert [x.gpu_type for x in choose_probes(p, found, {}, 0.0, SETTINGS)] == ["new"]
    assert stranded(problem(p.jobs, p.gpus, list(p.gpu_types.values()), p.predictions, unmeasured_margin_z=0.0),
                    found) == []


def test_ties_go_to_the_least_power_and_the_fewest_gpus():
    """new and hot both guess 7/s (log-sd 0.5) on one GPU; new draws 100 W, hot 400 W: new.
    On new two GPUs do no better than one (7/s): one GPU."""
    preds = DoubtfulPredictions(
        taus={("w", "new", 1, True): 7, ("w", "new", 2, True): 7, ("w", "hot", 1, True): 7},
        doubts=dict.fromkeys([("w", "new", 1, True), ("w", "new", 2, True), ("w", "hot", 1, True)], (0.5, False)),
    )
    p = problem([job("j", "w", tmin=10, dj=2)], node("hot", "h", 2) + node("new", "n", 2), [NEW, HOT], preds)
    assert [(x.gpu_type, x.num_gpus) for x in choose_probes(p, beliefs(p, preds), {}, 0.0, SETTINGS)] == [("new", 1)]


def test_more_gpus_are_taken_when_they_raise_the_chance():
    """Two new GPUs guess 9/s (log-sd 0.5) against one GPU's 7/s: 2 GPUs (chance 0.417 > 0.238)."""
    preds = DoubtfulPredictions(
        taus={("w", "new", 1, True): 7, ("w", "new", 2, True): 9},
        doubts={("w", "new", 1, True): (0.5, False), ("w", "new", 2, True): (0.5, False)},
    )
    p = problem([job("j", "w", tmin=10, dj=2)], node("new", "n", 2) + node("old", "o", 18), [NEW, OLD], preds)
    assert [(x.gpu_type, x.num_gpus) for x in choose_probes(p, beliefs(p, preds), {}, 0.0, SETTINGS)] == [("new", 2)]
    small = problem(p.jobs, node("new", "n", 2), [NEW], preds)  # a budget of 1 GPU: the 1-GPU configuration
    assert [(x.num_gpus, round(x.chance, 3)) for x in choose_probes(small, beliefs(small, preds), {}, 0.0, SETTINGS)] \
        == [(1, round(phi_upper(math.log(10 / 7) / 0.5), 3))]


def test_the_budget_is_a_share_of_the_cluster_less_the_gpus_already_probing():
    """20 GPUs x 0.1 = 2 GPUs for probes; one already probes, so one of three stranded jobs
    (equal chances: by id) gets a probe, the others are told the budget is taken."""
    jobs = [job(x, "w", tmin=10) for x in ("a", "b", "c")]
    gpus = node("old", "o", 8) + node("new", "n", 8) + node("hot", "h", 4)
    p = catalog_is_unsure(jobs=jobs, gpus=gpus)
    found = beliefs(p, p.predictions)
    assert [x.job_id for x in choose_probes(p, found, {}, 0.0, SETTINGS)] == ["a", "b"]
    assert [x.job_id for x in choose_probes(p, found, {}, 0.0, SETTINGS, probing_gpus=1)] == ["a"]
    why = no_probe_reasons(p, found, {}, 0.0, SETTINGS, probing_gpus=1)
    taken = NO_PROBE_REASON.format(why=BUDGET.format(budget=2, gpus=20, share=0.1))
    assert why == {"b": taken, "c": taken}
    assert choose_probes(p, found, {}, 0.0, SETTINGS, probing_gpus=2) == []


def test_a_small_cluster_still_probes_on_one_gpu():
    """6 GPUs x 0.1 = 0.6: at least one GPU."""
    p = catalog_is_unsure(jobs=[job("a", "w", tmin=10), job("b", "w", tmin=10)])
    assert [x.job_id for x in choose_probes(p, beliefs(p, p.predictions), {}, 0.0, SETTINGS)] == ["a"]


def test_higher_priority_jobs_take_the_budget_first():
    p = catalog_is_unsure(jobs=[job("a", "w", tmin=10), job("b", "w", tmin=10, priority=2)])
    assert [x.job_id for x in choose_probes(p, beliefs(p, p.predictions), {}, 0.0, SETTINGS)] == ["b"]


def test_a_job_is_probed_again_only_after_retry_after_and_at_most_max_probes_times():
    p = catalog_is_unsure()
    found = beliefs(p, p.predictions)
    recent = {"j": ProbeHistory(probes=1, last_probe_at=9000.0)}
    assert choose_probes(p, found, recent, 10000.0, SETTINGS) == []
    assert no_probe_reasons(p, found, recent, 10000.0, SETTINGS) == {
        "j": "No probe now: it was probed 1000 s ago; the next probe may start in 2600 s."}
    assert [x.job_id for x in choose_probes(p, found, recent, 12600.0, SETTINGS)] == ["j"]
    used = {"j": ProbeHistory(probes=3, last_probe_at=0.0)}
    assert choose_probes(p, found, used, 1e6, SETTINGS) == []
    assert no_probe_reasons(p, found, used, 1e6, SETTINGS) == {
        "j": NO_PROBE_REASON.format(why=PROBES_USED.format(probes=3))}


def test_min_chance_and_the_switch_are_honoured():
    p = catalog_is_unsure()
    found = beliefs(p, p.predictions)
    assert choose_probes(p, found, {}, 0.0, ExplorationSettings(min_chance=0.3)) == []
    assert choose_probes(p, found, {}, 0.0, ExplorationSettings(enabled=False)) == []
    assert no_probe_reasons(p, found, {}, 0.0, ExplorationSettings(enabled=False)) == {
        "j": NO_PROBE_REASON.format(why=OFF)}


def test_choices_are_deterministic():
    jobs = [job(x, "w", tmin=10 + n) for n, x in enumerate("edcba")]
    p = catalog_is_unsure(jobs=jobs, gpus=node("new", "n", 40))
    runs = [choose_probes(p, beliefs(p, p.predictions), {}, 5.0, SETTINGS) for _ in range(3)]
    assert runs[0] == runs[1] == runs[2]
    assert [x.job_id for x in runs[0]] == ["e", "d", "c", "b"]  # 4 GPUs; the loosest T_min first


def test_with_probes_makes_the_chosen_jobs_probes():
    p = catalog_is_unsure(jobs=[job("j", "w", tmin=10, dj=4), job("k", "w", tmin=10)])
    q = with_probes(p, [Probe("j", "new", 2, 0.3, 7.0, 600.0)])
    assert (q.jobs[0].probe, q.jobs[0].only_gpu_type, q.jobs[0].max_gpus) == (True, "new", 2)
    assert q.jobs[1] == p.jobs[1]
