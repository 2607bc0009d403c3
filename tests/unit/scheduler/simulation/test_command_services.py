"""manage.py simulate --services: the services figures in the report and the table; options that
cannot go with it exit 1 with the reason and write nothing."""
import json
from dataclasses import replace
from io import StringIO

import pytest
from django.core.management import call_command

from .test_command import POLICY_KEYS, run_as_from_shell

SERVICE_KEYS = {"p99_violation_minutes_pct", "mean_gpu_utilization", "energy_kwh", "replicas_mean",
                "spike_rounds_to_adjust", "spike_violated_minutes", "training_energy_per_step_j", "by_service"}


def test_a_services_run_reports_each_policys_services_and_keeps_every_training_key(tmp_path):
    out_path, out = tmp_path / "sim.json", StringIO()
    call_command("simulate", "--json", str(out_path), "--services", "--jobs", "2", "--quick",
                 "--policies", "greedy_fastest,dedicated,gogh_no_services", stdout=out, stderr=StringIO())
    report = json.loads(out_path.read_text())
    assert set(report["policies"]) == {"greedy_fastest", "dedicated", "gogh_no_services"}
    for name, metrics in report["policies"].items():
        assert POLICY_KEYS <= set(metrics), name
    for name in ("greedy_fastest", "dedicated"):
        served = report["policies"][name]["services"]
        assert SERVICE_KEYS <= set(served), name
        assert set(served["by_service"]) == {"recommendation", "vision", "translation", "language"}
        assert served["service_minutes"] == 4 * 2 * 1440  # four services, two days
    assert report["policies"]["gogh_no_services"]["services"] is None
    assert report["scenario"]["gpus"] == {"k80": 8, "p100": 12, "v100": 12}
    assert len(report["scenario"]["services"]) == 4 and report["scenario"]["horizon_s"] == 2 * 86400
    assert {"gogh_serving_utilization_over_dedicated",
            "gogh_training_energy_per_step_over_no_services"} <= set(report["comparison"])
    table = out.getvalue()
    assert "P99 viol %" in table and "\ndedicated " in table


@pytest.mark.parametrize("argv, says", [
    (["--services", "--policies", "gogh,gavel_max_min"], "gavel_max_min cannot serve inference services"),
    (["--services", "--tenants"], "--services cannot be combined with --tenants"),
    (["--services", "--cluster", "modern"], "--services cannot be combined with --cluster modern"),
    (["--policies", "gogh,dedicated"], "dedicated: only with --services"),
    (["--policies", "oracle,oracle_no_services"], "oracle_no_services: only with --services"),
])
def test_options_that_do_not_go_with_services_exit_1_and_write_nothing(tmp_path, capsys, argv, says):
    with pytest.raises(SystemExit) as exited:
        run_as_from_shell("simulate", "--json", str(tmp_path / "x.json"), *argv)
    assert exited.value.code == 1
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
    assert not (tmp_path / "x.json").exists()


def test_a_cluster_that_cannot_give_dedicated_its_peak_exits_1_and_writes_nothing(tmp_path, capsys, monkeypatch):
    """On some seeds a service's peak needs more GPUs of each type than the cluster has free:
    `dedicated` cannot be run there, and the command says which service and what it needs."""
    from scheduler.simulation import run as run_module

    real = run_module.scenario_services

    def louder(*args, **kwargs):
        return tuple(replace(s, peak_rps=s.peak_rps * 40) for s in real(*args, **kwargs))

    monkeypatch.setattr(run_module, "scenario_services", louder)
    with pytest.raises(SystemExit) as exited:
        run_as_from_shell("simulate", "--json", str(tmp_path / "x.json"), "--services", "--jobs", "2", "--quick",
                          "--policies", "dedicated")
    assert exited.value.code == 1
    err = capsys.readouterr().err
    assert "dedicated: no GPU type has the free GPUs for" in err and "free)" in err and "Traceback" not in err
    assert not (tmp_path / "x.json").exists()
