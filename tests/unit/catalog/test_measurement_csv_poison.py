"""Poison bytes in a measurements file: a NUL (Python's csv reads it as a character, PostgreSQL
then refused the name lookup with a traceback) or a surrogate's bytes (not UTF-8) is reported as
file:line: reason, and nothing is imported. Runs on SQLite and, with DATABASE_URL, on PostgreSQL."""
import pytest
from django.core.management import get_commands, load_command_class

from catalog.models import Measurement

HEADER = b"workload,gpu_type,throughput,reference\n"
GOOD = b"ResNet-50 (batch size 64),v100,12.5,\n"
NUL_REASON = "contains a NUL character (byte 0x00), which text may not contain"


def run_as_from_shell(*argv):
    """Run the command as manage.py does: CommandError becomes stderr text and sys.exit."""
    command = load_command_class(get_commands()[argv[0]], argv[0])
    command.run_from_argv(["manage.py", *argv])


@pytest.mark.parametrize(
    "content,problems",
    [
        (HEADER + GOOD + b"ResNet\x00-50 (batch size 64),v100,1,\n", [f"3: {NUL_REASON}"]),
        (HEADER + b"ResNet-50 (batch size 64),v100,1,run\x00\n" + GOOD + b"x,\x00,1,\n",
         [f"2: {NUL_REASON}", f"4: {NUL_REASON}"]),
        (b"workload,gpu_type,through\x00put\n" + GOOD, [f"1: {NUL_REASON}"]),
        (HEADER + GOOD + b'ResNet-50 (batch size 64),v100,1,"two\nlines\x00"\n', [f"4: {NUL_REASON}"]),
        (HEADER + GOOD + b"ResNet-50 (batch size 64),v100,1,\xed\xa0\x80\n", ["3: not UTF-8 text (byte 0xed)"]),
        (HEADER + b"ResNet-50 (batch size 64),v100,1,\xff\n", ["2: not UTF-8 text (byte 0xff)"]),
    ],
    ids=["nul in a name", "nul in two rows", "nul in the header", "nul in a quoted second line", "surrogate bytes",
         "invalid utf-8"],
)
# Transactional: run_from_argv closes the database connections when it ends.
@pytest.mark.django_db(transaction=True)
def test_a_poison_byte_is_reported_as_file_line_reason_and_nothing_is_imported(
        v100, resnet50, tmp_path, capsys, content, problems):
    path = tmp_path / "m.csv"
    path.write_bytes(content)
    with pytest.raises(SystemExit) as exited:
        run_as_from_shell("import_measurements", str(path))
    assert exited.value.code == 1
    assert capsys.readouterr().err.splitlines() == [
        *(f"{path}:{problem}" for problem in problems),
        f"CommandError: nothing imported: {len(problems)} problem(s) in {path}",
    ]
    assert Measurement.objects.count() == 0
