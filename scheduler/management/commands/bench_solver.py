"""bench_solver --json OUT [--sizes 64,256,1024,6144] [--theta 2] [--contention N]: every solver on the
same reference instances; the logic lives in scheduler.optimizer.bench, this command only parses
and writes."""
import argparse
import json

from django.core.management.base import BaseCommand, CommandError

from gogh_web.cli_args import non_negative_int, output_file, positive_float
from scheduler.optimizer import bench
from scheduler.optimizer.problem import MAX_THETA


def sizes(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise CommandError(f"--sizes takes comma-separated GPU counts, not {text!r}.") from None
    if not values or min(values) < 12:
        raise CommandError("Every size must be at least 12 GPUs (a 4-GPU node of each of three types).")
    return values


def burners(text: str) -> int:
    count = non_negative_int(text)
    if count > bench.MAX_BURNERS:
        raise argparse.ArgumentTypeError(f"{text!r} is more than {bench.MAX_BURNERS} processes")
    return count


class Command(BaseCommand):
    help = "Benchmark the solvers on instances built from the reference data; print a table, write a JSON report."

    def add_arguments(self, parser):
        parser.add_argument("--json", required=True, type=output_file, help="Where to write the JSON report.")
        parser.add_argument("--sizes", default=",".join(map(str, bench.DEFAULT_SIZES)), help="Cluster sizes in GPUs.")
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument(
            "--time-limit", type=positive_float, default=10.0, help="Seconds per solve (cells, genetic: own)."
        )
        parser.add_argument(
            "--ilp-time-limit",
            type=positive_float,
            default=bench.GLOBAL_ILP_LIMIT_S,
            help="Seconds for the global ILP.",
        )
        parser.add_argument("--theta", type=int, default=2, choices=range(1, MAX_THETA + 1),
                            help="Jobs per GPU at most (2: pairs, as measured; more: groups estimated from pairs).")
        parser.add_argument("--contention", type=burners, default=0,
                            help="Solve every size again beside this many CPU-burning processes and compare (0: off).")

    def handle(self, *args, **options):
        report = bench.run(
            sizes(options["sizes"]), seed=options["seed"], time_limit_s=options["time_limit"],
            ilp_limit_s=options["ilp_time_limit"], theta=options["theta"], contention=options["contention"],
            log=lambda line: self.stderr.write(line),
        )
        options["json"].write_text(json.dumps(report, indent=2))
        self.stdout.write(bench.format_table(report))
        self.stdout.write(f"\nReport written to {options['json']}")
