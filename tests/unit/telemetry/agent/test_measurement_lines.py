"""The agent and the benchmark suite's GOGH_MEASUREMENT lines: recognised on a job's stdout,
forwarded (their JSON as printed) in the job's reports until the control plane took them; and
the GPU driver's version, reported at registration and, to a control plane that knows it, with
every heartbeat."""
import json

from telemetry.agent.progress import MAX_MEASUREMENT_LINE, parse, parse_measurement
from telemetry.agent.simulated import SIMULATED_DRIVER, SimulatedBackend, SimulatedType

from ..fake_nvml import fake_nvml
from ..test_agent_loop import (  # fixtures: `as` marks them re-exported
    assignment,
    plane as plane,
    python,
    run_agent as run_agent,
)
from ..test_agent_runner import wait_for

LINE = json.dumps({"case": "ResNet-50 (batch size 64)", "workload": "ResNet-50 (batch size 64)", "throughput": 12.5})


def test_a_measurement_line_gives_its_json_and_other_lines_nothing():
    assert parse_measurement(f"GOGH_MEASUREMENT {LINE}") == LINE
    assert parse_measurement("GOGH_MEASUREMENT {not json, judged by the control plane}") == (
        "{not json, judged by the control plane}")
    for other in ("GOGH_MEASUREMENTS {}", "GOGH_MEASUREMENT", "GOGH_MEASUREMENT    ", f" GOGH_MEASUREMENT {LINE}",
                  "GOGH_PROGRESS step=1", "loss 0.3"):
        assert parse_measurement(other) is None, other
    assert parse(f"GOGH_MEASUREMENT {LINE}") is None  # not a progress line either
    assert len(parse_measurement("GOGH_MEASUREMENT " + "x" * 10_000)) == MAX_MEASUREMENT_LINE


def test_a_jobs_lines_go_in_its_reports_once_delivered(plane, run_agent, tmp_path):
    code = (
        "import json, time\n"
        "from telemetry.agent.progress import report\n"
        f"print('GOGH_MEASUREMENT ' + {LINE!r}, flush=True)\n"
        "report(1, total=2); time.sleep(1.0)\n"
        "print('GOGH_MEASUREMENT {\"case\": \"second\"', flush=True)\n"
        "report(2, total=2); time.sleep(0.5)\n"
    )
    plane.assignments = [assignment(1, python(code))]
    run_agent(plane)
    assert wait_for(lambda: any(p["status"] == "succeeded" for p in plane.progress), timeout=15)
    sent = [line for p in plane.progress for line in p.get("measurements", [])]
    assert sent == [LINE, '{"case": "second"']  # each once, in order, whatever report carried it
    assert (tmp_path / "logs" / "job-1.out").read_text().count("GOGH_MEASUREMENT") == 2  # and in the job's log


def test_lines_refused_with_their_report_are_sent_again(plane, run_agent):
    code = (
        "import time\n"
        f"print('GOGH_MEASUREMENT ' + {LINE!r}, flush=True)\n"
        "time.sleep(1.5)\n"
    )
    plane.progress_status[4] = 503  # not settled: the report (and its line) waits
    plane.assignments = [assignment(4, python(code))]
    run_agent(plane)
    assert wait_for(lambda: any(r.get("measurements") for batch in plane.progress_batches for r in batch), timeout=10)
    plane.progress_status[4] = 200
    assert wait_for(lambda: any(p["status"] == "succeeded" for p in plane.progress), timeout=15)
    assert [line for p in plane.progress for line in p.get("measurements", [])] == [LINE]


def test_registration_and_heartbeats_carry_the_driver_version(plane, run_agent):
    bodies = []
    answer = plane._answer

    def knows_driver_versions(method, path, body):
        if path.endswith("/heartbeat/"):
            bodies.append(body)
        status, reply = answer(method, path, body)
        return status, ({**reply, "driver_version": body.get("driver_version", "")} if path.endswith("/register/")
                        else reply)

    plane._answer = knows_driver_versions
    run_agent(plane)
    assert wait_for(lambda: len(bodies) >= 2)
    assert plane.registrations[0]["driver_version"] == "580.159.04"  # fake NVML's nvmlSystemGetDriverVersion
    assert bodies[:2] == [{"driver_version": "580.159.04"}] * 2


def test_a_control_plane_from_before_driver_versions_gets_neither(plane, run_agent):
    bodies = []
    answer = plane._answer

    def strict(method, path, body):
        if path.endswith("/register/") and "driver_version" in body:
            return 400, {"driver_version": ["Unknown field."]}
        if path.endswith("/heartbeat/"):
            bodies.append(body)
        return answer(method, path, body)

    plane._answer = strict
    run_agent(plane)
    assert wait_for(lambda: len(bodies) >= 1 and plane.registrations)
    assert "driver_version" not in plane.registrations[0] and bodies[0] == {}


def test_a_driver_nvml_cannot_read_is_not_reported(plane, run_agent):
    run_agent(plane, nvml=fake_nvml(unsupported=("nvmlSystemGetDriverVersion",)))
    assert wait_for(lambda: plane.registrations and plane.heartbeats >= 1)
    assert "driver_version" not in plane.registrations[0]


def test_the_simulated_backend_reports_a_fixed_driver():
    kind = SimulatedType(name="v100", memory_gb=16, power_curve=((0, 35), (1, 300)))
    backend = SimulatedBackend(hostname="sim", layout=[("v100", 1)], types={"v100": kind})
    assert backend.driver_version() == SIMULATED_DRIVER == "simulated"
