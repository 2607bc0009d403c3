"""The functional core imports no Django (nor DRF or Celery): every module of these packages
runs, is tested and benchmarked alone, and the node agent installs without the web stack."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PURE_PACKAGES = ["catalog.predictors", "scheduler.optimizer", "scheduler.simulation", "telemetry.agent"]

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
