"""Tenants in the simulation: the multi-tenant scenario, the ledger's tenant_jain and
quota_violations on hand-made timelines, and what `gogh`'s rounds are given."""
import json
from io import StringIO

import pytest
from django.core.management import call_command

from scheduler.optimizer.catalog_predictions import CatalogPredictions
from scheduler.optimizer.problem import QuotaSpec
from scheduler.simulation import engine
from scheduler.simulation.engine import Simulation
from scheduler.simulation.jobs import SimJob
from scheduler.simulation.metrics import jain, policy_metrics
from scheduler.simulation.policies import Policy
from scheduler.simulation.tenants import BURST_SIZE, BURST_SPREAD_S, Holding, TenantLedger, with_tenants

from .factory import ROWS, V100_BUSY_W, scenario, truth

V100 = frozenset({"v100"})
HOUR = 3600.0


def ledger(shares, quotas=(), half_life_s=HOUR):
    return TenantLedger(shares, quotas, {"v100": 1.0, "k80": 0.5}, half_life_s)


def test_tenant_jain_compares_received_with_entitled_gpu_time():
    """Shares 3:1 on 4 GPUs, both asking for 4: entitled 3 and 1; each holds 2. x = 2/3 and 2,
    Jain = (8/3)^2 / (2 (4/9 + 4)) = 0.8."""
    book = ledger({"a": 3, "b": 1})
    holdings = [Holding("a", 4, "v100", 2.0, V100), Holding("b", 4, "v100", 2.0, V100)]
    book.record(100.0, holdings, gpus=4)
    assert book.ratios() == pytest.approx({"a": 2 / 3, "b": 2.0})
    assert jain(list(book.ratios().values())) == pytest.approx(0.8)


def test_quota_violations_count_gpus_denied_below_quota_while_others_borrow():
    """a owns 2 V100s and holds 1 with a 2-GPU job waiting that runs on V100: for 100 s b
    borrows 3 (denied min(2 - 1, 2, 3) = 1 GPU), then for 50 s nobody borrows (0: the GPUs are
    free, not borrowed), then for 10 s a holds its 2 (0), then its waiting job runs only on
    K80 (0)."""
    book = ledger({"a": 1, "b": 1}, [QuotaSpec("a", "v100", 2)])
    waiting = Holding("a", 2, None, 0.0, V100)
    book.record(100.0, [Holding("a", 1, "v100", 1.0, V100), waiting, Holding("b", 3, "v100", 3.0, V100)], gpus=8)
    book.record(50.0, [Holding("a", 1, "v100", 1.0, V100), waiting], gpus=8)
    book.record(10.0, [Holding("a", 2, "v100", 2.0, V100), waiting, Holding("b", 3, "v100", 3.0, V100)], gpus=8)
    book.record(10.0, [Holding("a", 1, "v100", 1.0, V100), Holding("a", 2, None, 0.0, frozenset({"k80"})),
                       Holding("b", 3, "v100", 3.0, V100)], gpus=8)
    assert book.denied_gpu_s == pytest.approx(100.0)


def test_usage_is_weighted_by_type_and_decays_with_the_half_life():
    book = ledger({"a": 1, "b": 1})
    book.record(HOUR, [Holding("a", 2, "k80", 2.0, frozenset({"k80"}), power_w=100.0)], gpus=4)
    assert book.usage["a"] == pytest.approx(1.0)  # 2 K80-hours at 0.5
    assert book.energy_j["a"] == pytest.approx(100.0 * HOUR)
    factors = book.factors()
    assert factors["a"] == pytest.approx(0.25) and factors["b"] == 1.0  # 2 ** -(1 / 0.5)
    book.record(HOUR, [], gpus=4)
    assert book.usage["a"] == pytest.approx(0.5)


def test_the_multi_tenant_jobs_are_deterministic_and_the_bursty_tenant_arrives_in_bursts():
    jobs = [SimJob(f"job-{n}", "A", n * 1000.0, 1, 100.0, 1.0) for n in range(80)]
    first, again = with_tenants(jobs, seed=3), with_tenants(jobs, seed=3)
    assert first == again and first != with_tenants(jobs, seed=4)
    assert {j.tenant for j in first} == {"vision", "nlp", "recsys", "burst"}
    burst = [j for j in first if j.tenant == "burst"]
    for start in range(0, len(burst), BURST_SIZE):
        group = [j.arrival_s for j in burst[start:start + BURST_SIZE]]
        assert max(group) - min(group) <= BURST_SPREAD_S
    steady = [(j.id, j.arrival_s) for j in first if j.tenant != "burst"]
    assert steady == [(j.id, j.arrival_s) for j in jobs if j.id in dict(steady)]  # the others keep their arrivals


def two_tenant_jobs():
    return [SimJob("a-0", "A", 0.0, 1, 36000.0, 5.0, tenant="a"), SimJob("b-0", "A", 0.0, 1, 36000.0, 5.0, tenant="b"),
            SimJob("a-1", "A", 800.0, 1, 36000.0, 5.0, tenant="a")]


def test_gogh_rounds_get_the_quotas_and_the_tenants_fair_share(monkeypatch):
    seen, solver = [], engine.get_solver("greedy_efficient")

    class Recording:
        def solve(self, problem):
            seen.append(problem)
            return solver.solve(problem)

    monkeypatch.setattr(engine, "get_solver", lambda name: Recording())
    quotas = (QuotaSpec("a", "v100", 1),)
    sc = scenario(two_tenant_jobs(), v100s=2, tenants={"a": 1, "b": 1}, quotas=quotas)
    Simulation(sc, truth(), Policy("p", "greedy_efficient", "catalog"), CatalogPredictions(ROWS)).run()
    assert all(p.quotas == quotas for p in seen)
    first, later = seen[0], seen[1]
    assert {j.fair_share for j in first.jobs} == {1.0}  # nobody used anything yet
    by_id = {j.id: j.fair_share for j in later.jobs}
    assert by_id["a-1"] == by_id["a-0"] and by_id["a-0"] == pytest.approx(0.5)  # both used half of everything


@pytest.mark.parametrize("policy", ["gavel_max_min", "gavel_ftf"])
def test_gavel_policies_run_a_tiny_two_tenant_scenario(policy):
    """One V100, three 1-hour jobs that never checkpoint: Gavel shares the GPU by rounds, each
    job saving when its lease is not renewed (no steps lost), paying the default 30 s restart
    overhead on each return: everything done, busy GPU-time all at V100's busy power."""
    sc = scenario(two_tenant_jobs(), v100s=1, tenants={"a": 1, "b": 1})
    run = Simulation(sc, truth(), Policy(policy, policy, "truth"), truth().predictions()).run()
    metrics = policy_metrics(run)
    assert metrics["completed"] == 3
    assert metrics["lost_gpu_hours_by_cause"]["preempted"] == 0.0 and metrics["preemptions"] > 0
    assert 3 * 3600.0 < max(s.done_at for s in run.jobs) <= 3 * 3600.0 * 360 / 330 + 360
    assert metrics["energy_kwh"] == pytest.approx(V100_BUSY_W * metrics["busy_gpu_hours"] / 1000, rel=1e-3)
    assert set(metrics["energy_kwh_by_tenant"]) == {"a", "b"} and metrics["max_finish_time_fairness"] > 0


def test_a_tiny_multi_tenant_run_reports_every_tenant_key(tmp_path):
    out_path = tmp_path / "sim.json"
    call_command("simulate", "--json", str(out_path), "--jobs", "4", "--jobs-per-hour", "6", "--quick", "--tenants",
                 "--half-life-h", "24", "--policies", "gogh,gavel_max_min,gavel_ftf", "--no-explore",
                 stdout=StringIO(), stderr=StringIO())
    report = json.loads(out_path.read_text())
    assert report["scenario"]["tenants"] == {"vision": 4, "nlp": 2, "recsys": 1, "burst": 1}
    assert report["scenario"]["half_life_h"] == 24.0 and report["scenario"]["quotas"]
    for name, m in report["policies"].items():
        assert 0 < m["tenant_jain"] <= 1, name
        assert m["quota_violations"] >= 0 and m["max_finish_time_fairness"] > 0, name
        assert sum(m["energy_kwh_by_tenant"].values()) == pytest.approx(m["energy_kwh"], abs=5e-3), name
    assert {"gogh_energy_per_step_over_gavel_max_min", "gogh_max_ftf_over_gavel_ftf"} <= set(report["comparison"])


def test_finish_time_fairness_is_the_jct_over_the_jct_with_a_1_over_n_share():
    """One V100. Alone, a job gets all of it: rho 1. Two equal jobs arriving together: each
    would take twice its time with half the GPU; the first done takes 1 h (rho 0.5), the
    second waits for it and takes 2 h, in a system of 1.5 jobs on average (2 for its first
    hour, 1 for its second): its JCT with 1/1.5 of the GPU is 1.5 h, rho 2 / 1.5."""
    alone = Simulation(scenario([SimJob("a", "A", 0.0, 1, 36000.0, 5.0)]), truth(),
                       Policy("p", "greedy_efficient", "catalog"), CatalogPredictions(ROWS)).run()
    assert policy_metrics(alone)["max_finish_time_fairness"] == pytest.approx(1.0)
    two = Simulation(scenario([SimJob("a", "A", 0.0, 1, 36000.0, 5.0), SimJob("b", "A", 0.0, 1, 36000.0, 5.0)]),
                     truth(), Policy("p", "greedy_efficient", "catalog"), CatalogPredictions(ROWS)).run()
    assert sorted(s.ftf_rho for s in two.jobs) == pytest.approx([0.5, 2 / 1.5])
