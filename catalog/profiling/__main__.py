"""python -m catalog.profiling: run the benchmark suite (docs/profiling.md).

    python -m catalog.profiling --all --gpu-type h100 --out h100.csv
    python -m catalog.profiling --cases "ResNet-50 (batch size 64),LM (batch size 20)" --emit-lines
    python -m catalog.profiling --all --tiny --device cpu          # a dry run, seconds on a CPU

Bad arguments end with a message and exit status 2, before any case runs. Failed cases do
not change the exit status: they are results (docs/profiling.md, "Failures"). As a GOGH job
(--emit-lines), SIGTERM stops the case in progress and exits 75 ("preempted, resume me").
"""
import argparse
import difflib
import sys
from pathlib import Path

from telemetry.agent import contract

from . import cases as suite_cases
from .output import CsvOut, describe, measurement
from .runner import DEFAULT_CASE_TIMEOUT_S, Stopped, run_suite
from .worker import Options


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.exit(2, f"{self.prog}: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m catalog.profiling", description="Run GOGH's benchmark suite.")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--cases", help="Comma-separated case names (docs/profiling.md lists them).")
    which.add_argument("--all", action="store_true", help="Every case this machine's GPUs can run.")
    parser.add_argument("--gpu-type", help="The catalog's name of this GPU type (needed with --out).")
    parser.add_argument("--tiny", action="store_true", help="Shrunk models and timing: checks, not measurements.")
    parser.add_argument("--device", choices=("cuda", "cpu"), help="Default: cuda when available, else cpu.")
    parser.add_argument("--out", type=Path, help="Write the measurements CSV (docs/measurements-csv.md) here.")
    parser.add_argument("--emit-lines", action="store_true", help="Print GOGH_MEASUREMENT and GOGH_PROGRESS lines.")
    parser.add_argument("--case-timeout-s", type=float, default=DEFAULT_CASE_TIMEOUT_S,
                        help=f"Stop a case after this many seconds (default {DEFAULT_CASE_TIMEOUT_S:g}).")
    return parser


def _gpu_count(device: str) -> int:
    import torch

    return torch.cuda.device_count() if device == "cuda" else 0


def _check(args, parser) -> list:
    """The cases to run; parser.error (exit 2) for anything that cannot work."""
    if args.case_timeout_s <= 0:
        parser.error(f"--case-timeout-s must be positive, not {args.case_timeout_s:g}")
    if args.out is not None:
        if not args.gpu_type or not args.gpu_type.strip():
            parser.error("--out needs --gpu-type: every row of the CSV names the GPU type it was measured on")
        if not args.out.parent.is_dir():
            parser.error(f"--out {args.out}: no such folder {args.out.parent}")
        if args.out.is_dir():
            parser.error(f"--out {args.out} is a folder, not a file")
    gpus = _gpu_count(args.device)
    if args.device == "cuda" and gpus == 0:
        parser.error("--device cuda: no CUDA device is visible (use --device cpu, with --tiny for a dry run)")
    if args.all:
        return suite_cases.cases_for(gpus if args.device == "cuda" else 1)
    names = [name.strip() for name in args.cases.split(",") if name.strip()]
    if not names:
        parser.error("--cases names no case")
    try:
        chosen = suite_cases.select(names)
    except KeyError as exc:
        name = exc.args[0]
        close = difflib.get_close_matches(name, suite_cases.BY_NAME, n=1)
        parser.error(f"unknown case {name!r}" + (f" (did you mean {close[0]!r}?)" if close else
                                                 " (docs/profiling.md lists the cases)"))
    if args.device == "cuda":
        too_big = [c.name for c in chosen if c.num_gpus > gpus]
        if too_big:
            parser.error(f"case {too_big[0]!r} needs more GPUs than the {gpus} visible here")
    return chosen


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.device is None:
        args.device = "cuda" if _gpu_count("cuda") else "cpu"
    chosen = _check(args, parser)
    job = contract.Job.from_environment() if args.emit_lines else None
    out = CsvOut(args.out, args.gpu_type.strip()) if args.out is not None else None
    log = sys.stderr if args.emit_lines else sys.stdout
    done = []

    def on_result(result: dict) -> None:
        done.append(result)
        print(describe(result), file=log, flush=True)
        if out is not None:
            out.add(result)
        if job is not None:
            job.measurement(measurement(result))
            job.progress(len(done), total=len(chosen))

    print(f"{len(chosen)} case(s) on {args.device}{' (tiny)' if args.tiny else ''}", file=log, flush=True)
    try:
        run_suite(chosen, Options(args.device, args.tiny), timeout_s=args.case_timeout_s, on_result=on_result,
                  should_stop=lambda: job is not None and job.preemption_requested)
    except Stopped as stopped:
        print(f"preempted during {stopped.args[0]!r}; {len(done)} case(s) done", file=log, flush=True)
        job.exit_preempted()
    finally:
        if out is not None:
            out.close()
    failed = sum(1 for r in done if r.get("error"))
    total_s = sum(r["seconds"] for r in done)
    print(f"{len(done)} case(s) in {total_s:.1f} s, {failed} failed"
          + (f"; {out.rows} row(s) in {args.out}" if out is not None else ""), file=log, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
