"""argparse types shared by the management commands: a bad option value is a one-line usage
error before anything runs, not a traceback (or a NaN that compares false with every bound
and runs) after minutes of work."""
import argparse
import math
import os
from pathlib import Path


def _number(cast, text: str, what: str, ok) -> float | int:
    try:
        value = cast(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
    if (isinstance(value, float) and not math.isfinite(value)) or not ok(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
    return value


def positive_float(text: str) -> float:
    return _number(float, text, "a finite number greater than 0", lambda v: v > 0)


def non_negative_float(text: str) -> float:
    return _number(float, text, "a finite number of at least 0", lambda v: v >= 0)


def positive_int(text: str) -> int:
    return _number(int, text, "a whole number greater than 0", lambda v: v > 0)


def non_negative_int(text: str) -> int:
    return _number(int, text, "a whole number of at least 0", lambda v: v >= 0)


def output_file(text: str) -> Path:
    """A file the command will write at its end: checked now, so that a typo in the folder
    does not throw away a run of many minutes."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a directory; give a file name")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(f"cannot write {text}: no folder {folder}")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise argparse.ArgumentTypeError(f"cannot write {text}: permission denied")
    return path
