"""Command line of the agent, shared by `python -m telemetry.agent` and `manage.py run_agent`.

Failures a person must act on (no driver, refused registration, bad flags) end with one line
on stderr and a non-zero status, never a traceback. The simulated backend and jobs are imported
only under --simulate, and the NVML backend only without it: a node imports what it runs.
"""
import argparse
import logging
import math
import os
import signal
import socket
import sys
from pathlib import Path

from .agent import Agent, RegistrationRefused
from .client import ControlPlane, Refused, Unreachable
from .config import AgentConfig
from .gpus import NoGpuDriver

EXIT_NO_DRIVER, EXIT_USAGE, EXIT_REFUSED = 2, 3, 4
#: The control plane's default GOGH_NODE_HEARTBEAT_TIMEOUT_S. The agent cannot read the control
#: plane's setting, so a slower heartbeat is a warning, not an error: it is right where the
#: operator raised the timeout (and --fence-after with it), and marks the node down between
#: heartbeats where they did not.
DEFAULT_HEARTBEAT_TIMEOUT_S = 60.0

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    env = os.environ.get
    parser.add_argument("--url", default=env("GOGH_AGENT_URL"), help="Control plane URL (env GOGH_AGENT_URL).")
    parser.add_argument(
        "--token", default=env("GOGH_AGENT_TOKEN"),
        help="Agent account token (env GOGH_AGENT_TOKEN; prefer the variable: arguments show in `ps`).",
    )
    parser.add_argument("--hostname", default=socket.gethostname().lower(), help="Node name (default: this host's).")
    parser.add_argument("--cell", default="", help="Scheduling cell of the node.")
    parser.add_argument("--label", action="append", default=[], metavar="KEY=VALUE", help="Node label; repeatable.")
    parser.add_argument("--simulate", action="store_true", help="Simulated GPUs and jobs instead of NVML.")
    parser.add_argument("--gpus", default="v100:4", help="With --simulate: <type>:<count>,... (default v100:4).")
    parser.add_argument("--seed", type=int, default=0, help="With --simulate: seed of noise and true throughputs.")
    parser.add_argument(
        "--speedup", type=float, default=1.0, help="With --simulate: simulated jobs run this much faster."
    )
    parser.add_argument("--fail-gpu", action="append", default=[], metavar="INDEX@SECONDS",
                        help="With --simulate: GPU INDEX fails SECONDS after start; repeatable.")
    parser.add_argument("--throughputs", default=None, metavar="FILE",
                        help="With --simulate: Gavel's simulation_throughputs.json, the simulated jobs' true rates "
                        "(default: the repository's copy, catalog/reference/gavel/).")
    parser.add_argument(
        "--refuse-power-limits", action="store_true",
        help="With --simulate: the GPUs refuse every power limit, as NVML does for an agent without root.",
    )
    parser.add_argument(
        "--run-commands", action="store_true",
        help="With --simulate: a job that has a command runs it (a real process on the simulated GPUs, e.g. a "
        "training job on the CPU); only jobs without one run as simulated jobs.",
    )
    parser.add_argument(
        "--observe", action="store_true",
        help="Observer: register, heartbeat and sample the GPUs, never poll assignments or run a job; for nodes "
        "whose jobs a cluster manager runs (GOGH_EXECUTOR=slurm: Slurm starts GOGH's jobs there).",
    )
    parser.add_argument("--log-dir", default=env("GOGH_AGENT_LOG_DIR", "gogh-agent-logs"), help="Per-job logs.")
    parser.add_argument(
        "--checkpoint-dir", default=env("GOGH_AGENT_CHECKPOINT_DIR"),
        help="Jobs checkpoint into <this>/job-<id> (GOGH_CHECKPOINT_DIR; default <log dir>/checkpoints); shared "
        "storage lets a job moved to another node resume there (env GOGH_AGENT_CHECKPOINT_DIR).",
    )
    parser.add_argument(
        "--simulate-checkpoint-interval", type=float, default=60.0, metavar="SECONDS",
        help="With --simulate: simulated jobs checkpoint every SECONDS of real time (0: never).",
    )
    parser.add_argument("--sample-interval", type=float, default=1.0, help="Seconds between GPU samples (<= 1).")
    parser.add_argument("--upload-interval", type=float, default=5.0)
    parser.add_argument("--heartbeat-interval", type=float, default=15.0)
    parser.add_argument("--poll-interval", type=float, default=2.0, help="Seconds between assignment polls.")
    parser.add_argument("--progress-interval", type=float, default=10.0)
    parser.add_argument("--buffer-size", type=int, default=86_400, help="Samples kept while unreachable.")
    parser.add_argument("--batch-size", type=int, default=500, help="Samples per upload (<= 1000).")
    parser.add_argument(
        "--grace-period", type=float, default=10.0,
        help="Seconds between SIGTERM and SIGKILL when the agent fences, leaves or loses a GPU (the job's own grace "
        "period where shorter); a withdrawn or moved job gets its own grace period (set on the control plane).",
    )
    parser.add_argument(
        "--fence-after", type=float, default=60.0,
        help="The node's jobs are gone this long after its last successful heartbeat (SIGTERM --grace-period "
        "before, then SIGKILL), so that they never run on two nodes; the control plane's answers lower it to fit "
        "its GOGH_NODE_HEARTBEAT_TIMEOUT_S.",
    )


def run(args: argparse.Namespace) -> int:
    """Run the agent until SIGTERM/SIGINT; the exit status."""
    logging.basicConfig(level=os.environ.get("GOGH_LOG_LEVEL", "INFO").upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    problem = _usage_problem(args)
    if problem:
        return _fail(problem, EXIT_USAGE)
    if args.heartbeat_interval > DEFAULT_HEARTBEAT_TIMEOUT_S:
        log.warning("--heartbeat-interval %g s is above the control plane's default heartbeat timeout (%g s): unless "
                    "its GOGH_NODE_HEARTBEAT_TIMEOUT_S is raised above it, the node goes down between heartbeats",
                    args.heartbeat_interval, DEFAULT_HEARTBEAT_TIMEOUT_S)
    client = ControlPlane(args.url, args.token)
    config = AgentConfig(
        hostname=args.hostname, log_dir=Path(args.log_dir), cell=args.cell,
        labels=dict(label.split("=", 1) for label in args.label),
        sample_interval_s=args.sample_interval, upload_interval_s=args.upload_interval,
        heartbeat_interval_s=args.heartbeat_interval, poll_interval_s=args.poll_interval,
        progress_interval_s=args.progress_interval, buffer_size=args.buffer_size, batch_size=args.batch_size,
        grace_s=args.grace_period, fence_after_s=args.fence_after, simulate_seed=args.seed if args.simulate else None,
        simulate_speedup=args.speedup, simulate_checkpoint_interval_s=args.simulate_checkpoint_interval,
        checkpoint_dir=Path(args.checkpoint_dir) if args.checkpoint_dir else None,
        simulate_run_commands=args.run_commands, observe=args.observe,
    )
    try:
        if args.simulate:
            config.simulate_throughputs = _simulated_throughputs(args)
            backend = _simulated_backend(args, client)
        else:
            backend = _nvml_backend()
    except ValueError as exc:
        return _fail(str(exc), EXIT_USAGE)
    except NoGpuDriver as exc:
        return _fail(str(exc), EXIT_NO_DRIVER)
    agent = Agent(backend=backend, client=client, config=config)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: agent.stop())
    try:
        agent.run()
    except NoGpuDriver as exc:
        return _fail(str(exc), EXIT_NO_DRIVER)
    except RegistrationRefused as exc:
        return _fail(str(exc), EXIT_REFUSED)
    return 0


def _usage_problem(args) -> str | None:
    if not args.url:
        return "give the control plane's URL: --url or GOGH_AGENT_URL"
    if not args.token:
        return "give the agent's token: --token or GOGH_AGENT_TOKEN"
    if any("=" not in label for label in args.label):
        return "labels are KEY=VALUE"
    if not 0 < args.sample_interval <= 1:
        return "--sample-interval must lie in (0, 1] seconds: GPUs are sampled at 1 Hz or faster"
    if not 1 <= args.batch_size <= 1000:
        return "--batch-size must lie in 1..1000"
    if args.buffer_size < 1:
        return "--buffer-size must be at least 1"
    # NaN compares false with every bound: without isfinite, --heartbeat-interval nan would pass
    # any `<= 0` test and beat once, and 0 or less would poll (or fence) on every turn of the loop.
    for flag in ("upload_interval", "heartbeat_interval", "poll_interval", "progress_interval", "grace_period",
                 "fence_after", "speedup"):
        value = getattr(args, flag)
        if not (math.isfinite(value) and value > 0):
            return f"--{flag.replace('_', '-')} must be a finite number greater than 0, not {value:g}"
    if not (math.isfinite(args.simulate_checkpoint_interval) and args.simulate_checkpoint_interval >= 0):
        return f"--simulate-checkpoint-interval must be a finite number of seconds >= 0 (0: never), not " \
               f"{args.simulate_checkpoint_interval:g}"
    if args.heartbeat_interval + args.grace_period >= args.fence_after:
        return (f"--heartbeat-interval ({args.heartbeat_interval:g} s) must be shorter than --fence-after "
                f"({args.fence_after:g} s) less --grace-period ({args.grace_period:g} s): the node's jobs would be "
                "stopped between heartbeats")
    if args.fail_gpu and not args.simulate:
        return "--fail-gpu needs --simulate: real GPUs fail on their own"
    if args.run_commands and args.observe:
        return "--run-commands runs jobs, --observe runs none: give one of them"
    if args.run_commands and not args.simulate:
        return "--run-commands needs --simulate: a node with real GPUs always runs jobs' commands"
    if args.run_commands and args.speedup != 1:
        return "--run-commands runs jobs at their own speed: leave --speedup at 1 (its rates are divided by it)"
    if args.throughputs and not args.simulate:
        return "--throughputs needs --simulate: real jobs run at their own rate"
    if args.refuse_power_limits and not args.simulate:
        return "--refuse-power-limits needs --simulate: real GPUs refuse on their own (an agent without root)"
    return None


def _nvml_backend():
    """The NVML backend; NoGpuDriver where nvidia-ml-py, the agent's one dependency, is missing."""
    from .nvml import NvmlBackend

    try:
        return NvmlBackend()
    except ImportError as exc:
        raise NoGpuDriver(f"nvidia-ml-py is not installed ({exc}): pip install nvidia-ml-py, or run with --simulate "
                          "for simulated GPUs.") from exc


def _simulated_backend(args, client: ControlPlane):
    """Simulated GPUs whose power curves are the control plane's GPU types' (GET /api/gpu-types/)."""
    from .simulated import NO_PERMISSION, SimulatedBackend, SimulatedType, parse_failures, parse_gpu_spec

    layout = parse_gpu_spec(args.gpus)
    try:
        rows = client.gpu_types()
    except (Unreachable, Refused) as exc:
        raise ValueError(f"could not read the GPU types from {args.url}: {exc}") from exc
    types = {
        row["name"]: SimulatedType(
            name=row["name"], memory_gb=row["memory_gb"],
            power_curve=tuple(map(tuple, row["power_curve"] or [[0, row["idle_w"]], [1, row["tdp_w"]]])),
        )
        for row in rows
    }
    return SimulatedBackend(hostname=args.hostname, layout=layout, types=types, seed=args.seed,
                            fail_after=parse_failures(args.fail_gpu),
                            refuse_limits=NO_PERMISSION if args.refuse_power_limits else "")


def _simulated_throughputs(args) -> Path:
    """Gavel's throughputs for the simulated jobs, checked here so that a node installed without
    them stops at once rather than failing every job it is given."""
    from .simjob import GAVEL_THROUGHPUTS

    path = Path(args.throughputs) if args.throughputs else GAVEL_THROUGHPUTS
    if not path.is_file():
        raise ValueError(f"no file {path}: give Gavel's simulation_throughputs.json with --throughputs "
                         "(the simulated jobs' true rates)")
    return path.resolve()


def _fail(message: str, code: int) -> int:
    print(f"run_agent: {message}", file=sys.stderr)
    return code


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m telemetry.agent", description="The GOGH node agent.")
    add_arguments(parser)
    return run(parser.parse_args(argv))
