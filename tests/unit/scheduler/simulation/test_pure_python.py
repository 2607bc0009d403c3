"""The simulator imports no Django: it runs and is tested alone; the command is the shell."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]

PROBE = """
import pkgutil, importlib, sys
import scheduler.simulation as pkg
for mod in pkgutil.iter_modules(pkg.__path__):
    importlib.import_module(f"scheduler.simulation.{mod.name}")
leaked = sorted(m for m in sys.modules if m == "django" or m.startswith("django."))
print(",".join(leaked))
"""


def test_no_module_of_the_simulator_imports_django():
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
