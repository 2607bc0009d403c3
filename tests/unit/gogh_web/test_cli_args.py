"""The commands' shared option types: NaN, infinities, signs and unwritable outputs refused up front."""
import argparse

import pytest

from gogh_web import cli_args


@pytest.mark.parametrize(
    "kind, text",
    [
        (cli_args.positive_float, "nan"), (cli_args.positive_float, "inf"), (cli_args.positive_float, "0"),
        (cli_args.positive_float, "-1"), (cli_args.positive_float, "fast"), (cli_args.non_negative_float, "-0.5"),
        (cli_args.non_negative_float, "-inf"), (cli_args.positive_int, "0"), (cli_args.positive_int, "1.5"),
        (cli_args.non_negative_int, "-1"),
    ],
)
def test_bad_numbers_are_usage_errors(kind, text):
    with pytest.raises(argparse.ArgumentTypeError, match=repr(text)):
        kind(text)


def test_good_numbers_pass_as_their_type():
    assert cli_args.positive_float("2.5") == 2.5 and cli_args.non_negative_float("0") == 0.0
    assert cli_args.positive_int("3") == 3 and cli_args.non_negative_int("0") == 0


def test_output_file_is_checked_before_the_run(tmp_path):
    assert cli_args.output_file(str(tmp_path / "out.json")) == tmp_path / "out.json"
    with pytest.raises(argparse.ArgumentTypeError, match="no folder"):
        cli_args.output_file(str(tmp_path / "missing" / "out.json"))
    with pytest.raises(argparse.ArgumentTypeError, match="is a directory"):
        cli_args.output_file(str(tmp_path))


def test_a_parser_reports_the_option_and_the_reason(capsys):
    parser = argparse.ArgumentParser(prog="simulate")
    parser.add_argument("--noise", type=cli_args.non_negative_float)
    with pytest.raises(SystemExit):
        parser.parse_args(["--noise", "nan"])
    assert "argument --noise: 'nan' is not a finite number of at least 0" in capsys.readouterr().err
