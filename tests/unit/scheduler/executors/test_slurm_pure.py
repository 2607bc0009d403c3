"""The executors are the functional core's: no module of theirs imports the web stack, so the
parsers can be benchmarked and the executor run without Django (tests/unit/test_pure_core.py's
probe, on this package)."""
import subprocess
import sys

from tests.unit.test_pure_core import PROBE, ROOT


def test_no_executor_module_imports_the_web_stack():
    for package in ("scheduler.executors", "scheduler.executors.slurm"):
        done = subprocess.run([sys.executable, "-c", PROBE, package], cwd=ROOT, capture_output=True, text=True,
                              timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "", package
