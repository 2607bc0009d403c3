"""The predictor package is the functional core: it must import without Django."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]


def test_package_imports_no_django():
    code = (
        "import sys; import catalog.predictors, catalog.predictors.bench, catalog.predictors.power; "
        "bad = [m for m in sys.modules if m == 'django' or m.startswith('django.')]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                            env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_django_in_sources():
    sources = (ROOT / "catalog" / "predictors").glob("*.py")
    assert not [p.name for p in sources if "django" in p.read_text()]
