"""The benchmark suite as the control plane sees it: its version and the cases a node runs.

The one place that imports catalog.profiling (which imports PyTorch only when a case runs), so
that tests can stand in for it and the control plane starts no campaign where the suite is
not installed.
"""
import shlex
from dataclasses import dataclass

from django.conf import settings


@dataclass(frozen=True)
class SuiteCase:
    name: str
    workload: str
    num_gpus: int
    partner: str | None = None


def suite_version() -> str:
    from catalog.profiling import SUITE_VERSION

    return SUITE_VERSION


def cases_for(gpu_count: int) -> list[SuiteCase]:
    """The suite's cases, in its order, for a node with `gpu_count` GPUs of one type."""
    from catalog.profiling.cases import cases_for as suite_cases_for

    return [
        SuiteCase(case.name, case.workload, case.num_gpus, case.partner) for case in suite_cases_for(gpu_count)
    ]


def command(case_names: list[str], gpu_type: str) -> str:
    """The shell command of a campaign job: the suite's CLI on its cases, printing its lines.
    GOGH_PROFILING_PYTHON is the node's interpreter; GOGH_PROFILING_SUITE_ARGS adds flags
    (the tests' `--tiny --device cpu`)."""
    argv = [settings.GOGH_PROFILING_PYTHON, "-m", "catalog.profiling", "--cases", ",".join(case_names),
            "--gpu-type", gpu_type, "--emit-lines"]
    extra = settings.GOGH_PROFILING_SUITE_ARGS.strip()
    return shlex.join(argv) + (f" {extra}" if extra else "")
