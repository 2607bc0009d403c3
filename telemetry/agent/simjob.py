"""A simulated job: a real process that makes progress at the rate a real job would.

    python -m telemetry.agent.simjob --workload 'ResNet-50 (batch size 64)' --gpu-type v100 \
        --num-gpus 1 --steps 500 [--partner NAME ... | --partner-file PATH] [--seed 0] \
        [--deviation 0.15] [--noise 0.05] [--checkpoint-interval-s 60] \
        [--throughputs simulation_throughputs.json]

True throughput = the reference throughput (Gavel's measurements, read from --throughputs: the
repository's copy, catalog/reference/gavel/simulation_throughputs.json, by default) of the
workload on the GPU type (with the partner, when sharing with one job) x a fixed per-workload
factor exp(N(0, deviation)) drawn from the seed, so the catalog is not exactly right and the
predictors have something to learn; every interval adds noise N(0, noise) on top. Next to
several partners (theta > 2), which Gavel never measured, the rate is the alone rate x
telemetry.agent.colocation.group_fraction of the pair fractions (each: the reference pair
throughput / the reference alone throughput), the estimate the optimiser plans with. It prints the progress
protocol (telemetry.agent.progress) and exits 0 after --steps steps. --speedup multiplies the
rate, for demos that should not take hours. --partner may be repeated. With --partner-file the
partners are read from that file (one workload name per line; empty: alone) every interval:
the agent rewrites it when the job's partners on the GPU change without the job moving, and
the rate follows, as a real job's would. With --pace-file the rate is multiplied by the number
in that file (0 < pace <= 1; anything else, or no file: 1), read every interval: the agent
writes the pace of the job's GPUs under their power limits (simulated.py).

It follows the job contract (telemetry.agent.contract) as a real training job does: it resumes
at the step of GOGH_RESUME_CHECKPOINT (a small JSON file it wrote; a checkpoint it cannot read
fails the job, as a real job's would) and reports absolute steps; it checkpoints into
GOGH_CHECKPOINT_DIR every --checkpoint-interval-s seconds of its run (real time; 0: never, so a
stop loses all its work); on SIGTERM it checkpoints (unless it never does) and exits 75.
"""
import argparse
import functools
import json
import math
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

from . import contract
from .colocation import group_fraction

TICK_S = 0.25
#: Gavel's measured throughputs where a checkout of the repository has them (the catalog reads the
#: same file, catalog/gavel.py). A node that installed the agent alone has no such copy and
#: passes the file with --throughputs.
GAVEL_THROUGHPUTS = Path(__file__).resolve().parents[2] / "catalog/reference/gavel/simulation_throughputs.json"


def true_factor(workload: str, seed: int, deviation: float) -> float:
    """The fixed factor between the reference and the simulated truth for one workload."""
    return math.exp(random.Random(f"{seed}:{workload}").gauss(0.0, deviation))


@functools.cache  # 1.2 MB of JSON, looked up for every partner set a job meets
def _gavel_data(path: Path) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read Gavel's throughputs from {path} ({exc}); pass the file with --throughputs") \
            from None


def reference_throughput(workload: str, gpu_type: str, num_gpus: int, partner: str | None,
                         throughputs: Path = GAVEL_THROUGHPUTS) -> float:
    """Steps/s of `workload` on `num_gpus` GPUs of `gpu_type` (consolidated) in Gavel's data;
    ValueError when the data has no such record or the configuration does not fit (0).

    Only a lookup: the file maps worker type (the GPU type; `<type>_unconsolidated` for spread
    GPUs) -> job key -> partner key -> throughput, where the keys are the Python literals of
    (workload, GPUs), "null" holds the job alone and a pair holds [this job, partner]. The
    catalog parses the whole file into records (catalog/gavel.py); the agent cannot import it."""
    partners = _gavel_data(Path(throughputs)).get(gpu_type, {}).get(repr((workload, num_gpus)), {})
    value = partners.get("null" if partner is None else repr((partner, num_gpus)))
    if value is None:
        raise ValueError(f"no reference throughput for {workload} on {num_gpus} x {gpu_type} with partner {partner}")
    throughput = value if partner is None else value[0]
    if throughput <= 0:
        raise ValueError(f"{workload} does not fit on {num_gpus} x {gpu_type} (reference throughput 0)")
    return float(throughput)


def reference_group_throughput(workload: str, gpu_type: str, num_gpus: int, partners: tuple[str, ...],
                               throughputs: Path = GAVEL_THROUGHPUTS) -> float:
    """Steps/s of `workload` next to `partners` in Gavel's data: alone or with one partner,
    the record; next to several, the alone record x group_fraction of the pair fractions (pair
    record / alone record). ValueError where a record is missing or does not fit."""
    if len(partners) < 2:
        return reference_throughput(workload, gpu_type, num_gpus, partners[0] if partners else None, throughputs)
    alone = reference_throughput(workload, gpu_type, num_gpus, None, throughputs)
    return alone * group_fraction(
        reference_throughput(workload, gpu_type, num_gpus, p, throughputs) / alone for p in partners
    )


class PartnerRates:
    """A simulated job's true rate next to each set of partners it meets, looked up once per set."""

    def __init__(self, workload: str, gpu_type: str, num_gpus: int, factor: float,
                 throughputs: Path = GAVEL_THROUGHPUTS):
        self.workload, self.gpu_type, self.num_gpus, self.factor = workload, gpu_type, num_gpus, factor
        self.throughputs = throughputs
        self._rates: dict[tuple[str, ...], float | None] = {}  # None: Gavel did not measure a pair of it
        self.current = 0.0

    def start(self, partners: tuple[str, ...]) -> float:
        """The rate at start; ValueError where Gavel has none (the job fails)."""
        partners = tuple(sorted(partners))
        self.current = self._lookup(partners)
        if self._rates[partners] is None:
            raise ValueError(f"no reference throughput for {self.workload} on {self.num_gpus} x {self.gpu_type} "
                             f"with partners {', '.join(partners) or 'none'}")
        return self.current

    def now(self, partners: tuple[str, ...]) -> float:
        """The rate with the current partners; the rate it had where Gavel measured no such pair."""
        rate = self._lookup(tuple(sorted(partners)))
        if rate is not None:
            self.current = rate
        return self.current

    def _lookup(self, partners: tuple[str, ...]) -> float | None:
        if partners not in self._rates:
            try:
                self._rates[partners] = (
                    reference_group_throughput(self.workload, self.gpu_type, self.num_gpus, partners, self.throughputs)
                    * self.factor
                )
            except ValueError:
                self._rates[partners] = None
                return None
            shared = f" with {', '.join(partners)}" if partners else ""
            print(f"simjob: {self.workload} on {self.num_gpus} x {self.gpu_type}{shared}: "
                  f"{self._rates[partners]:.3f} steps/s", flush=True)
        return self._rates[partners]


def run(*, rate: float | Callable[[], float], steps: int, noise: float, rng: random.Random, clock=time.monotonic,
        sleep=time.sleep, job: contract.Job | None = None, start: int = 0, checkpoint_every_s: float = 0.0) -> int:
    """Progress at `rate` steps/s (a callable is asked again every interval) from step `start`,
    checkpointing every `checkpoint_every_s` seconds (0: never); the exit status: 0 done,
    PREEMPTED_EXIT_CODE stopped on the job's preemption notice."""
    job = job or contract.Job()
    rate_now = rate if callable(rate) else (lambda: rate)
    done, exact, last = start, float(start), clock()
    saved, saved_at = start, last
    job.progress(done, steps)
    while done < steps:
        if job.preemption_requested:
            if checkpoint_every_s > 0 and done != saved:
                save_checkpoint(job, done)
            return contract.PREEMPTED_EXIT_CODE
        sleep(TICK_S)
        now = clock()
        exact += rate_now() * (now - last) * max(0.0, 1 + rng.gauss(0.0, noise))
        last = now
        done = min(steps, int(exact))
        job.progress(done, steps)
        if checkpoint_every_s > 0 and now - saved_at >= checkpoint_every_s and done not in (saved, steps):
            save_checkpoint(job, done)
            saved, saved_at = done, now
    return 0


def read_pace(path: Path | None) -> float:
    """The pace the agent wrote (1 without a file, or with one that holds no pace in (0, 1])."""
    if path is None:
        return 1.0
    try:
        pace = float(path.read_text())
    except (OSError, ValueError):
        return 1.0
    return pace if 0 < pace <= 1 else 1.0


def save_checkpoint(job: contract.Job, step: int) -> None:
    """A simulated job's state is its step: a small JSON file, written as the contract says."""
    job.save_checkpoint(step, lambda path: path.write_text(json.dumps({"step": step})), suffix=".json")


def resume_step(job: contract.Job) -> int:
    """The step the job's resume checkpoint holds (without one, GOGH_RESUME_STEP's); ValueError
    when it cannot be read."""
    if job.resume_checkpoint is None:
        return job.resume_step
    try:
        return int(json.loads(job.resume_checkpoint.read_text())["step"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"cannot resume from {job.resume_checkpoint}: {exc}") from None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m telemetry.agent.simjob", description=__doc__.split("\n")[0])
    parser.add_argument("--workload", required=True)
    parser.add_argument("--gpu-type", required=True)
    parser.add_argument("--num-gpus", type=int, default=1)
    parser.add_argument("--partner", action="append", default=[], help="A job sharing the GPU (repeat for several).")
    parser.add_argument(
        "--partner-file", type=Path, default=None, help="Read the partners from here (one per line), every interval."
    )
    parser.add_argument("--pace-file", type=Path, default=None,
                        help="Read the pace under the GPUs' power limits from here (0 < pace <= 1), every interval.")
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--deviation", type=float, default=0.15)
    parser.add_argument("--noise", type=float, default=0.05)
    parser.add_argument("--speedup", type=float, default=1.0)
    parser.add_argument("--checkpoint-interval-s", type=float, default=60.0,
                        help="Checkpoint every this many seconds of real time (0: never).")
    parser.add_argument("--throughputs", type=Path, default=GAVEL_THROUGHPUTS,
                        help="Gavel's simulation_throughputs.json (default: the repository's copy).")
    args = parser.parse_args(argv)
    rates = PartnerRates(args.workload, args.gpu_type, args.num_gpus,
                         true_factor(args.workload, args.seed, args.deviation) * args.speedup, args.throughputs)

    def partners_now() -> tuple[str, ...]:
        if args.partner_file is not None:
            try:
                return tuple(line.strip() for line in args.partner_file.read_text().splitlines() if line.strip())
            except OSError:
                pass
        return tuple(args.partner)

    try:
        job = contract.Job.from_environment()
        start = resume_step(job)
        _gavel_data(args.throughputs)  # a missing file says so, not that every configuration is unmeasured
        rates.start(partners_now())
    except ValueError as exc:
        print(f"simjob: {exc}", file=sys.stderr)
        return 2

    def rate() -> float:
        return rates.now(partners_now()) * read_pace(args.pace_file)

    return run(rate=rate, steps=args.steps, noise=args.noise, rng=random.Random(args.seed), job=job, start=start,
               checkpoint_every_s=args.checkpoint_interval_s)


if __name__ == "__main__":
    sys.exit(main())
