"""A simulated job: a real process that makes progress at the rate a real job would.

    python -m telemetry.agent.simjob --workload 'ResNet-50 (batch size 64)' --gpu-type v100 \
        --num-gpus 1 --steps 500 [--partner NAME | --partner-file PATH] [--seed 0] [--deviation 0.15] [--noise 0.05]

True throughput = the reference throughput (Gavel's measurements, catalog/gavel.py) of the
workload on the GPU type (with the partner, when sharing) x a fixed per-workload factor
exp(N(0, deviation)) drawn from the seed, so the catalog is not exactly right and the
predictors have something to learn; every interval adds noise N(0, noise) on top. It prints
the progress protocol (telemetry.agent.progress) and exits 0 after --steps steps. --speedup
multiplies the rate, for demos that should not take hours. With --partner-file the partner is
read from that file (empty: none) every interval: the agent rewrites it when the job's partner
on the GPU changes without the job moving, and the rate follows, as a real job's would.
"""
import argparse
import math
import random
import sys
import time

from catalog.gavel import read_throughputs

from collections.abc import Callable
from pathlib import Path

from . import progress

TICK_S = 0.25


def true_factor(workload: str, seed: int, deviation: float) -> float:
    """The fixed factor between the reference and the simulated truth for one workload."""
    return math.exp(random.Random(f"{seed}:{workload}").gauss(0.0, deviation))


def reference_throughput(workload: str, gpu_type: str, num_gpus: int, partner: str | None) -> float:
    """Steps/s of `workload` on `num_gpus` GPUs of `gpu_type` (consolidated) in Gavel's data;
    ValueError when the data has no such record or the configuration does not fit (0)."""
    for record in read_throughputs():
        if (
            record.workload.name == workload and record.gpu_type == gpu_type and record.num_gpus == num_gpus
            and record.consolidated and (record.partner.name if record.partner else None) == partner
        ):
            if record.throughput <= 0:
                raise ValueError(f"{workload} does not fit on {num_gpus} x {gpu_type} (reference throughput 0)")
            return record.throughput
    raise ValueError(f"no reference throughput for {workload} on {num_gpus} x {gpu_type} with partner {partner}")


def run(*, rate: float | Callable[[], float], steps: int, noise: float, rng: random.Random, clock=time.monotonic,
        sleep=time.sleep) -> None:
    """Progress at `rate` steps/s (a callable is asked again every interval)."""
    rate_now = rate if callable(rate) else (lambda: rate)
    done, exact, last = 0, 0.0, clock()
    progress.report(0, steps)
    while done < steps:
        sleep(TICK_S)
        now = clock()
        exact += rate_now() * (now - last) * max(0.0, 1 + rng.gauss(0.0, noise))
        last = now
        done = min(steps, int(exact))
        progress.report(done, steps)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m telemetry.agent.simjob", description=__doc__.split("\n")[0])
    parser.add_argument("--workload", required=True)
    parser.add_argument("--gpu-type", required=True)
    parser.add_argument("--num-gpus", type=int, default=1)
    parser.add_argument("--partner", default=None)
    parser.add_argument("--partner-file", type=Path, default=None, help="Read the partner from here, every interval.")
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--deviation", type=float, default=0.15)
    parser.add_argument("--noise", type=float, default=0.05)
    parser.add_argument("--speedup", type=float, default=1.0)
    args = parser.parse_args(argv)
    factor = true_factor(args.workload, args.seed, args.deviation) * args.speedup
    rates: dict[str | None, float] = {}

    def rate_with(partner: str | None) -> float:
        if partner not in rates:
            rates[partner] = reference_throughput(args.workload, args.gpu_type, args.num_gpus, partner) * factor
            print(f"simjob: {args.workload} on {args.num_gpus} x {args.gpu_type}"
                  f"{f' with {partner}' if partner else ''}: {rates[partner]:.3f} steps/s", flush=True)
        return rates[partner]

    def partner_now() -> str | None:
        if args.partner_file is None:
            return args.partner
        try:
            return args.partner_file.read_text().strip() or None
        except OSError:
            return args.partner

    try:
        rate_with(partner_now())
    except ValueError as exc:
        print(f"simjob: {exc}", file=sys.stderr)
        return 2

    def rate() -> float:
        try:
            return rate_with(partner_now())
        except ValueError:  # a pair Gavel did not measure: keep the last known rate
            return rates[next(reversed(rates))]

    run(rate=rate, steps=args.steps, noise=args.noise, rng=random.Random(args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
