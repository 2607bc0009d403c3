"""import_measurements FILE: a summary line on success; on failure every problem, exit status 1."""
from io import StringIO

import pytest
from django.core.management import call_command, get_commands, load_command_class

from catalog.models import Measurement

GOOD = "workload,gpu_type,throughput\nResNet-50 (batch size 64),v100,12.5\nLM (batch size 20),k80,0\n"
BAD = (
    "workload,gpu_type,throughput\n"
    "ResNet-50 (batch size 64),v100,12.5\n"
    "ResNet-50 (batch size 64),a40,1\n"
    "LM (batch size 20),k80,-2\n"
)


def run_as_from_shell(*argv):
    """Run the command as manage.py does: CommandError becomes stderr text and sys.exit."""
    command = load_command_class(get_commands()[argv[0]], argv[0])
    command.run_from_argv(["manage.py", *argv])


@pytest.fixture
def catalog(v100, k80, resnet50, lm):
    pass


def test_imports_and_says_how_many(catalog, tmp_path):
    path = tmp_path / "bench.csv"
    path.write_text(GOOD)
    out = StringIO()
    call_command("import_measurements", str(path), stdout=out)
    assert out.getvalue() == f"imported 2 measurements from {path}\n"
    assert Measurement.objects.count() == 2


# Transactional: run_from_argv closes the database connections when it ends.
@pytest.mark.django_db(transaction=True)
def test_failure_prints_every_problem_and_exits_1(catalog, tmp_path, capsys):
    path = tmp_path / "bench.csv"
    path.write_text(BAD)
    with pytest.raises(SystemExit) as exited:
        run_as_from_shell("import_measurements", str(path))
    assert exited.value.code == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        f"{path}:3: unknown gpu type 'a40' (known: k80, v100)",
        f"{path}:4: throughput: -2 is negative",
        f"CommandError: nothing imported: 2 problem(s) in {path}",
    ]
    assert Measurement.objects.count() == 0


@pytest.mark.parametrize(
    "name, says", [("import_measurements", "docs/measurements-csv.md"), ("load_reference_catalog", "Idempotent")]
)
def test_help(name, says, capsys):
    with pytest.raises(SystemExit):
        run_as_from_shell(name, "--help")
    assert says in " ".join(capsys.readouterr().out.split())
