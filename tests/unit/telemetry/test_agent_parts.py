"""The agent's plain parts: the buffer, the progress protocol, the simulated GPUs and jobs."""
import io
import json
import random
import subprocess
import sys

import pytest

from telemetry.agent import progress
from telemetry.agent.buffer import SampleBuffer
from telemetry.agent.simjob import reference_throughput, run, true_factor
from telemetry.agent.simulated import (
    BUSY_UTILIZATION,
    SimulatedBackend,
    SimulatedType,
    parse_gpu_spec,
)
from telemetry.demo_inventory import DEMO_NODES

V100 = SimulatedType(name="v100", memory_gb=16, power_curve=((0.0, 35.0), (1.0, 300.0)))
K80 = SimulatedType(name="k80", memory_gb=12, power_curve=((0.0, 25.0), (0.5, 100.0), (1.0, 150.0)))


def test_buffer_keeps_everything_within_its_bound_and_counts_what_it_drops():
    buffer = SampleBuffer(capacity=5)
    buffer.extend(range(4))
    batch = buffer.peek(3)
    assert batch == [0, 1, 2] and len(buffer) == 4  # a failed upload leaves the buffer as it was
    buffer.extend(range(4, 8))  # 8 items into 5 places: 0, 1, 2 dropped, oldest first
    assert (len(buffer), buffer.dropped) == (5, 3)
    buffer.commit(batch)  # the batch was pushed out meanwhile: nothing else is removed
    assert buffer.peek(10) == [3, 4, 5, 6, 7]
    buffer.commit(buffer.peek(2))
    assert buffer.peek(10) == [5, 6, 7]


def test_buffer_needs_room():
    with pytest.raises(ValueError):
        SampleBuffer(capacity=0)


@pytest.mark.parametrize(
    "line, parsed",
    [
        ("GOGH_PROGRESS step=5", (5, None)),
        ("GOGH_PROGRESS step=12 total=100", (12, 100)),
        ("GOGH_PROGRESS step=12 total=100  ", (12, 100)),
        ("GOGH_PROGRESS step=-1", None),
        ("GOGH_PROGRESS step=3 total=0", None),
        ("progress step=3", None),
        ("epoch 1 GOGH_PROGRESS step=3", None),
    ],
)
def test_progress_lines(line, parsed):
    assert progress.parse(line) == parsed


def test_report_writes_a_line_the_parser_reads():
    out = io.StringIO()
    progress.report(7, total=10, stream=out)
    progress.report(8, stream=out)
    assert [progress.parse(line) for line in out.getvalue().splitlines()] == [(7, 10), (8, None)]


def test_gpu_spec():
    assert parse_gpu_spec("v100:4, k80:8") == [("v100", 4), ("k80", 8)]
    for bad in ["", "v100", "v100:0", ":3", "v100:x"]:
        with pytest.raises(ValueError):
            parse_gpu_spec(bad)


def test_simulated_power_follows_the_types_curve_and_load():
    backend = SimulatedBackend(hostname="sim-1", layout=[("v100", 2), ("k80", 1)], types={"v100": V100, "k80": K80},
                               seed=1, noise=0.0)
    backend.open()
    assert [(d.index, d.gpu_type) for d in backend.devices()] == [(0, "v100"), (1, "v100"), (2, "k80")]
    backend.note_busy({1, 2})
    idle, busy, k80 = backend.sample(now=0.0)
    assert (idle.utilization, idle.power_w) == (0.0, 35.0)
    assert busy.utilization == BUSY_UTILIZATION and busy.power_w == pytest.approx(35 + 265 * 0.9)
    assert k80.power_w == pytest.approx(100 + 50 * 0.8)
    assert K80.power_at(0.25) == pytest.approx(62.5)


def test_simulated_backend_refuses_unknown_types():
    with pytest.raises(ValueError, match="a100"):
        SimulatedBackend(hostname="h", layout=[("a100", 1)], types={"v100": V100})


def test_true_throughput_deviates_per_workload_fixed_by_seed():
    factor = true_factor("ResNet-50 (batch size 64)", seed=3, deviation=0.15)
    assert factor == true_factor("ResNet-50 (batch size 64)", seed=3, deviation=0.15)
    assert factor != true_factor("ResNet-50 (batch size 64)", seed=4, deviation=0.15)
    factors = [true_factor(f"w{i}", seed=0, deviation=0.15) for i in range(400)]
    spread = sorted(abs(f - 1) for f in factors)[200]
    assert 0.05 < spread < 0.2  # median deviation about 0.67 * 15 %
    assert true_factor("w", seed=0, deviation=0.0) == 1.0


def test_reference_throughput_comes_from_gavels_data():
    assert reference_throughput("ResNet-50 (batch size 64)", "v100", 1, None) == pytest.approx(4.3948, rel=1e-3)
    with pytest.raises(ValueError):
        reference_throughput("ResNet-50 (batch size 64)", "h100", 1, None)


def test_from_a_checkout_a_simulated_job_reads_the_file_the_catalog_reads():
    from catalog.gavel import GAVEL_THROUGHPUTS
    from telemetry.agent.simjob import GAVEL_THROUGHPUTS as simulated_default

    assert simulated_default == GAVEL_THROUGHPUTS and simulated_default.is_file()


def test_a_simulated_job_reads_gavels_throughputs_from_the_file_it_is_given(tmp_path):
    """A node that installed the agent alone passes Gavel's file (--throughputs); without one
    the job says which file it could not read, in one line."""
    table = tmp_path / "gavel.json"
    table.write_text(json.dumps({"v100": {"('ResNet-50 (batch size 64)', 1)": {
        "null": 2.0, "('ResNet-18 (batch size 64)', 1)": [1.5, 3.0], "('A3C', 1)": [0.0, 0.0]}}}))
    assert reference_throughput("ResNet-50 (batch size 64)", "v100", 1, None, table) == 2.0
    assert reference_throughput("ResNet-50 (batch size 64)", "v100", 1, "ResNet-18 (batch size 64)", table) == 1.5
    with pytest.raises(ValueError, match="does not fit"):
        reference_throughput("ResNet-50 (batch size 64)", "v100", 1, "A3C", table)
    with pytest.raises(ValueError, match="no reference throughput"):
        reference_throughput("ResNet-50 (batch size 64)", "v100", 2, None, table)
    missing = subprocess.run(
        [sys.executable, "-m", "telemetry.agent.simjob", "--workload", "ResNet-50 (batch size 64)",
         "--gpu-type", "v100", "--steps", "10", "--throughputs", str(tmp_path / "none.json")],
        capture_output=True, text=True,
    )
    assert missing.returncode == 2 and "cannot read Gavel's throughputs" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_a_simulated_job_progresses_at_its_rate(capsys):
    clock = iter(x * 0.25 for x in range(1000))
    run(rate=8.0, steps=20, noise=0.0, rng=random.Random(0), clock=lambda: next(clock), sleep=lambda s: None)
    lines = [progress.parse(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[0] == (0, 20) and lines[1] == (2, 20) and lines[-1] == (20, 20)
    assert len(lines) == 11  # 8 steps/s, 2 per quarter second


def test_simulated_gpus_are_the_demo_nodes_gpus():
    backend = SimulatedBackend(hostname="demo-v100-01", layout=[("v100", 8)], types={"v100": V100})
    backend.open()
    demo = next(node for node in DEMO_NODES if node.hostname == "demo-v100-01")
    assert [d.uuid for d in backend.devices()] == [gpu.uuid for gpu in demo.gpus]


def test_a_simulated_job_of_an_unmeasured_configuration_fails_with_a_message():
    result = subprocess.run(
        [sys.executable, "-m", "telemetry.agent.simjob", "--workload", "ResNet-50 (batch size 64)",
         "--gpu-type", "v100", "--num-gpus", "3", "--steps", "10"],
        capture_output=True, text=True,
    )
    assert result.returncode == 2 and "no reference throughput" in result.stderr and "Traceback" not in result.stderr


def test_partner_rates_follow_the_partner_and_keep_the_last_rate_for_an_unmeasured_pair(monkeypatch, capsys):
    import telemetry.agent.simjob as simjob

    calls = []
    real = simjob.reference_throughput

    def counted(*args):
        calls.append(args[3])
        return real(*args)

    monkeypatch.setattr(simjob, "reference_throughput", counted)
    rates = simjob.PartnerRates("ResNet-50 (batch size 64)", "v100", 1, factor=1.0)
    alone = rates.start(())
    shared = rates.now(("ResNet-18 (batch size 64)",))
    assert shared < alone and rates.now(()) == alone
    assert rates.now(("No such workload",)) == alone and rates.now(("No such workload",)) == alone  # the rate it had
    assert calls.count("No such workload") == 1  # looked up once, not every quarter second
    with pytest.raises(ValueError, match="no reference throughput"):
        simjob.PartnerRates("ResNet-50 (batch size 64)", "v100", 1, factor=1.0).start(("No such workload",))


def test_a_simulated_job_next_to_two_partners_runs_at_group_fraction_of_its_pair_rates():
    """Gavel measured pairs only: next to two jobs, the alone rate x group_fraction of the two
    pair fractions; next to one, the pair's reference x the factor exactly, as before groups."""
    import telemetry.agent.simjob as simjob
    from telemetry.agent.colocation import group_fraction

    workload, first, second = "ResNet-50 (batch size 64)", "ResNet-18 (batch size 64)", "ResNet-18 (batch size 32)"
    reference = {p: simjob.reference_throughput(workload, "v100", 1, p) for p in (None, first, second)}
    rates = simjob.PartnerRates(workload, "v100", 1, factor=1.5)
    expected = (
        1.5
        * reference[None]
        * group_fraction([reference[first] / reference[None], reference[second] / reference[None]])
    )
    assert rates.start((second, first)) == pytest.approx(expected)
    assert expected < 1.5 * min(reference[first], reference[second])  # slower than next to either alone
    assert rates.now((first,)) == reference[first] * 1.5
    assert rates.now((first, "No such workload")) == reference[first] * 1.5  # a pair unmeasured: the rate it had
