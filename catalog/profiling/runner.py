"""Runs cases one after the other, each in its own process (group), so that a hang, a crash
or a leak of one case cannot take the suite down: a case over its timeout is killed with every
process it started and recorded as `timeout`; the suite goes on with the next case.

A result is a dict: the case's names, then either the measured values (throughput, ci_low,
ci_high, steps_timed, stable, power_w, utilization, memory_gb, and partner_throughput for a
pair) or `error` (oom | error | timeout) and `message`; `seconds` is the case's wall time.
"""
import os
import signal
import time
from collections.abc import Callable, Iterable

from . import parallel
from .cases import Case
from .worker import Options, alone

DEFAULT_CASE_TIMEOUT_S = 300.0
_POLL_S = 0.2


class Stopped(Exception):
    """should_stop() turned true during a case (the job is being preempted); the case was killed."""


def _never() -> bool:
    return False


def run_suite(cases: Iterable[Case], options: Options, *, timeout_s: float = DEFAULT_CASE_TIMEOUT_S,
              on_result: Callable[[dict], None] | None = None, should_stop: Callable[[], bool] = _never) -> list[dict]:
    results = []
    for case in cases:
        result = run_case(case, options, timeout_s=timeout_s, should_stop=should_stop)
        results.append(result)
        if on_result:
            on_result(result)
    return results


def run_case(case: Case, options: Options, *, timeout_s: float = DEFAULT_CASE_TIMEOUT_S,
             should_stop: Callable[[], bool] = _never) -> dict:
    ctx = parallel.context(options)
    receive, send = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_case_process, args=(case, options, send), daemon=False)
    started = time.perf_counter()
    process.start()
    send.close()  # the child holds the only write end: its death reads as end of file here
    try:
        while not receive.poll(_POLL_S):
            if should_stop():
                _kill_group(process)
                raise Stopped(case.name)
            if time.perf_counter() - started >= timeout_s:
                _kill_group(process)
                outcome = {"error": "timeout", "message": f"no result within {timeout_s:g} s; the case was stopped"}
                break
        else:
            try:
                outcome = receive.recv()
            except EOFError:
                outcome = None
    finally:
        process.join()
        receive.close()
    if outcome is None:
        outcome = {"error": "error", "message": f"the case's process exited with status {process.exitcode}"}
    return {"case": case.name, "workload": case.workload, "num_gpus": case.num_gpus, "partner": case.partner,
            **outcome, "seconds": time.perf_counter() - started}


def _case_process(case: Case, options: Options, send) -> None:
    os.setsid()  # its own process group: a timeout kills the pair's or the ranks' processes too
    if case.partner is not None:
        result = parallel.pair(case, options)
    elif case.num_gpus > 1:
        result = parallel.data_parallel(case, options)
    else:
        result = alone(case, options)
    send.send(result)
    send.close()


def _kill_group(process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
