"""The functional core imports no Django (nor DRF or Celery): every module of these packages
runs, is tested and benchmarked alone, and the node agent installs without the web stack: from
the files docs/agent.md lists alone, copied into an empty folder."""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PURE_PACKAGES = ["catalog.predictors", "scheduler.optimizer", "scheduler.simulation", "telemetry.agent"]
#: Pure modules of Django apps: each GPU's own curve fit, speed tracker and health (docs/gpu_health.md).
PURE_MODULES = [
    "telemetry.power_curve_fit", "telemetry.gpu_speed", "telemetry.gpu_health",
    "scheduler.serving.latency", "scheduler.serving.forecast", "scheduler.serving.replicas",
]

PROBE = """
import importlib, pkgutil, sys
package = importlib.import_module(sys.argv[1])
for module in pkgutil.iter_modules(package.__path__):
    if module.name != "__main__":  # importing that one runs the CLI
        importlib.import_module(f"{sys.argv[1]}.{module.name}")
print(",".join(sorted({m.split(".")[0] for m in sys.modules} & {"django", "rest_framework", "celery"})))
"""


@pytest.mark.parametrize("package", PURE_PACKAGES)
def test_no_module_of_the_package_imports_the_web_stack(package):
    done = subprocess.run([sys.executable, "-c", PROBE, package], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


@pytest.mark.parametrize("module", PURE_MODULES)
def test_a_pure_module_imports_no_web_stack(module):
    probe = f"import importlib, sys; importlib.import_module({module!r}); print(','.join(sorted({WEB_STACK})))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


#: What docs/agent.md tells a GPU node to copy; the agent must run from these files alone.
AGENT_INSTALL = ("telemetry/__init__.py", "telemetry/agent")
WEB_STACK = "{m.split('.')[0] for m in sys.modules} & {'django', 'rest_framework', 'celery'}"


def copy_agent_install(folder: Path) -> Path:
    """Copy exactly the documented agent files (no caches) into `folder`; -> folder."""
    for name in AGENT_INSTALL:
        source, target = ROOT / name, folder / name
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return folder


def run_installed_agent(folder: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """`python -S ...` in `folder` with only `folder` on the path: -S leaves site-packages out, so
    neither Django nor anything else of the repository can be imported, only the copy."""
    return subprocess.run([sys.executable, "-S", *args], cwd=folder, capture_output=True, text=True, timeout=timeout,
                          env={"PYTHONPATH": str(folder), "PATH": "/usr/bin:/bin"})


def test_the_documented_install_copies_exactly_the_agent_files():
    install = (ROOT / "docs" / "agent.md").read_text().split("## Install on a GPU node", 1)[1].split("\n## ", 1)[0]
    copied = re.findall(r"^cp (?:-r )?(\S+) ", install, flags=re.M)
    assert [name.rstrip("/") for name in copied] == list(AGENT_INSTALL)


def test_every_module_of_the_copied_agent_imports_and_runs_alone(tmp_path):
    """What test_no_module_of_the_package_imports_the_web_stack cannot see from the repository
    root: a module that imports the repository's other apps (catalog, telemetry.demo_inventory)."""
    folder = copy_agent_install(tmp_path)
    probe = PROBE.replace(
        "print(", "assert str(package.__path__[0]).startswith(sys.argv[2]), package.__path__\nprint(", 1
    )
    done = run_installed_agent(folder, "-c", probe, "telemetry.agent", str(folder))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
    helped = run_installed_agent(folder, "-m", "telemetry.agent", "--help")
    assert helped.returncode == 0 and "--simulate" in helped.stdout and "--throughputs" in helped.stdout, helped.stderr


def test_the_agent_imports_the_simulation_only_under_simulate(tmp_path):
    """Without --simulate the copy needs nvidia-ml-py (not on the path here: one line, status 2)
    and never loads the simulated backend or job."""
    folder = copy_agent_install(tmp_path)
    probe = (
        "import sys\nfrom telemetry.agent import cli\n"
        "code = cli.main(['--url', 'http://127.0.0.1:9', '--token', 't', '--log-dir', 'logs'])\n"
        "print(code, sorted(m for m in sys.modules if m.startswith('telemetry.agent.')), sorted(" + WEB_STACK + "))"
    )
    done = run_installed_agent(folder, "-c", probe)
    assert done.returncode == 0, done.stderr
    code, loaded = done.stdout.strip().split(" ", 1)
    assert code == "2" and "nvidia-ml-py is not installed" in done.stderr and done.stderr.count("\n") == 1
    assert "simulated" not in loaded and "simjob" not in loaded and "colocation" not in loaded
    assert loaded.endswith("[]")  # no web stack
