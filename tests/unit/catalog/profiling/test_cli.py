"""python -m catalog.profiling: bad arguments end with a message and status 2 before any case
runs; a run prints the line protocol on stdout; the package imports no Django."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from catalog.profiling import __main__ as cli

ROOT = Path(__file__).resolve().parents[4]


@pytest.fixture(autouse=True)
def no_gpu(monkeypatch):
    monkeypatch.setattr(cli, "_gpu_count", lambda device: 0)


@pytest.mark.parametrize("argv, says", [
    ([], "one of the arguments --cases --all is required"),
    (["--all", "--cases", "A3C"], "argument --cases: not allowed with argument --all"),
    (["--cases", "ResNet50 (batch size 64)"],
     "unknown case 'ResNet50 (batch size 64)' (did you mean 'ResNet-50 (batch size 64)'?)"),
    (["--cases", "Nothing like it"], "unknown case 'Nothing like it' (docs/profiling.md lists the cases)"),
    (["--cases", " , "], "--cases names no case"),
    (["--all", "--out", "x.csv"], "--out needs --gpu-type: every row of the CSV names the GPU type it was measured on"),
    (["--all", "--out", "/no/such/folder/x.csv", "--gpu-type", "h100"], "--out /no/such/folder/x.csv: no such folder"),
    (["--all", "--case-timeout-s", "0"], "--case-timeout-s must be positive, not 0"),
    (["--all", "--case-timeout-s", "soon"], "argument --case-timeout-s: invalid float value: 'soon'"),
    (["--all", "--device", "tpu"], "argument --device: invalid choice: 'tpu'"),
    (["--all", "--device", "cuda"], "--device cuda: no CUDA device is visible"),
])
def test_bad_arguments_exit_2_with_a_message(argv, says, capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m catalog.profiling: ") and says in err
    assert "Traceback" not in err and err.count("\n") == 1


def test_a_run_prints_measurements_and_progress_and_imports_no_django(tmp_path):
    out = tmp_path / "suite.csv"
    argv = ["--cases", "LM (batch size 20),A3C", "--tiny", "--device", "cpu", "--emit-lines", "--out", str(out),
            "--gpu-type", "v100"]
    code = ("import sys; from catalog.profiling.__main__ import main; status = main(sys.argv[1:]); "
            "django = sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'rest_framework', 'gogh_web')); "
            "print('imported', django); sys.exit(status)")
    done = subprocess.run([sys.executable, "-c", code, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "imported []"
    assert [line.split(" ")[0] for line in lines[:-1]] == ["GOGH_MEASUREMENT", "GOGH_PROGRESS"] * 2
    assert lines[1] == "GOGH_PROGRESS step=1 total=2" and lines[3] == "GOGH_PROGRESS step=2 total=2"
    first = json.loads(lines[0].split(" ", 1)[1])
    assert (first["case"], first["partner"], first["suite_version"]) == ("LM (batch size 20)", None, "1")
    assert first["throughput"] > 0
    assert "2 case(s) in" in done.stderr and out.read_text().count("\n") == 3
