"""manage.py simulate: a tiny end-to-end run with every report key; bad input exits 1 with
file:line reasons and no traceback."""
import json
from io import StringIO

import pytest
from django.core.management import call_command, get_commands, load_command_class

from scheduler.models import SolverConfig

POLICY_KEYS = {
    "energy_kwh", "energy_per_step_j", "slo_violation", "avg_jct_s", "makespan_s", "jain_fairness", "completed",
    "migrations", "moves", "preemptions", "restarts", "max_moves_per_job", "jobs_by_moves", "lost_gpu_hours",
    "lost_gpu_hours_by_cause", "busy_gpu_hours", "stranded_jobs", "probes", "probed_jobs", "tenant_jain",
    "tenant_received_over_entitled", "max_finish_time_fairness", "quota_violations", "energy_kwh_by_tenant",
    "power_limit_share", "prediction_mape_by_gpu_age", "slow_gpu_flagged_after_h",
}
POLICIES = {"gogh", "gogh_no_power_limit", "gogh_fixed_weight", "oracle", "gavel_max_min", "gavel_ftf",
            "round_robin", "random", "greedy_fastest", "greedy_efficient"}


def run_as_from_shell(*argv):
    """Run the command as manage.py does: CommandError becomes stderr text and sys.exit."""
    command = load_command_class(get_commands()[argv[0]], argv[0])
    command.run_from_argv(["manage.py", *argv])


def test_a_tiny_run_writes_every_policy_and_the_learning_curve(tmp_path):
    out_path = tmp_path / "sim.json"
    out = StringIO()
    call_command("simulate", "--json", str(out_path), "--jobs", "4", "--jobs-per-hour", "4", "--quick",
                 "--fail", "3600:v100-s0-g0", stdout=out, stderr=StringIO())
    report = json.loads(out_path.read_text())
    assert set(report["policies"]) == POLICIES
    for name, metrics in report["policies"].items():
        assert POLICY_KEYS <= set(metrics), name
        assert metrics["completed"] == 4, name
        assert metrics["stranded_jobs"] == 0, name
        assert metrics["energy_kwh"] > 0
        assert metrics["restarts"] >= metrics["moves"] + metrics["preemptions"], name
        assert 0 <= metrics["lost_gpu_hours"] < metrics["busy_gpu_hours"], name
        assert sum(metrics["jobs_by_moves"].values()) == 4, name
        # one tenant: it received all it was entitled to, nobody was denied a quota
        assert metrics["tenant_jain"] == 1.0 and metrics["quota_violations"] == 0.0, name
        assert list(metrics["energy_kwh_by_tenant"]) == ["default"], name
        assert metrics["energy_kwh_by_tenant"]["default"] == pytest.approx(metrics["energy_kwh"], abs=2e-3), name
        assert metrics["max_finish_time_fairness"] > 0, name
    assert list(report["learning_curve"]) == [str(n) for n in range(21)]
    assert report["learning_curve"]["0"]["samples"] > 0
    assert set(report["learning_curve"]["0"]) == {"mape", "samples", "stranded", "stranded_mape"}
    assert report["scenario"]["exploration"]["probe_s"] == 600.0 and report["scenario"]["cluster"] == "gavel"
    assert report["scenario"]["gpus"] == {"k80": 36, "p100": 36, "v100": 36}
    assert report["scenario"]["failures"] == [[3600.0, "v100-s0-g0"]]
    assert len(report["scenario"]["restart_overhead_s"]) == 26
    keep_work_settings = ("move_cooldown_s", "move_hysteresis", "max_preemptions_per_hour", "max_moves_per_job")
    # the scenario runs the production defaults of the keep-work rules
    assert [report["scenario"][key] for key in keep_work_settings] == [600.0, 0.2, 2, 3]
    assert [SolverConfig._meta.get_field(key).default for key in keep_work_settings] == [600.0, 0.2, 2, 3]
    table = out.getvalue()
    assert all(name in table for name in POLICIES)
    assert table.splitlines()[0].split()[-7:] == ["moves", "preempt", "lost", "tJain", "maxFTF", "quotaGPUh", "sec"]
    assert "strand" in table.splitlines()[0] and "gogh stranded jobs" in table


def test_a_bad_truth_file_gives_file_line_reasons_and_exit_1(tmp_path, capsys):
    path = tmp_path / "truth.csv"
    path.write_text("workload,gpu_type,throughput\nA3C,v100,12\nA3C,k80,-3\n")
    with pytest.raises(SystemExit) as exited:
        run_as_from_shell("simulate", "--json", str(tmp_path / "x.json"), "--truth", str(path))
    assert exited.value.code == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [f"{path}:3: throughput: -3 is negative",
                                f"CommandError: --truth {path}: 1 problem(s) in the measurements file"]
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize("argv, says", [
    (["--policies", "gogh,fifo"], "Unknown policies fifo"),
    (["--fail", "60:a100-s0-g0"], "--fail: no GPU a100-s0-g0"),
])
def test_bad_options_exit_1_with_a_reason(tmp_path, capsys, argv, says):
    with pytest.raises(SystemExit) as exited:
        run_as_from_shell("simulate", "--json", str(tmp_path / "x.json"), *argv)
    assert exited.value.code == 1
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err


def test_a_bad_trace_line_is_reported_with_its_line(tmp_path, capsys):
    trace = tmp_path / "bad.trace"
    trace.write_text("A3C\tcmd\tdir\t-n\t1\t100\t1\t1\t-1\n")
    with pytest.raises(SystemExit):
        run_as_from_shell("simulate", "--json", str(tmp_path / "x.json"), "--trace", str(trace))
    assert f"{trace}:1: expected 10 tab-separated fields, found 9" in capsys.readouterr().err
