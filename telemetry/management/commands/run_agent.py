"""manage.py run_agent: the node agent (telemetry.agent), started from a Django checkout.

The agent itself imports no Django; this command only parses the same flags and runs it, so
`python -m telemetry.agent` on a GPU node without the web stack behaves the same.
"""
import argparse

from django.core.management.base import BaseCommand

from telemetry.agent import cli


class Command(BaseCommand):
    help = (
        "Run the GOGH node agent: register this node's GPUs (NVML, or simulated with --simulate "
        "[--gpus v100:4,k80:8]), heartbeat, sample every GPU at >= 1 Hz, run the jobs allocated to "
        "it, and leave cleanly on SIGTERM. See docs/agent.md."
    )

    def add_arguments(self, parser):
        cli.add_arguments(parser)

    def handle(self, *args, **options):
        code = cli.run(argparse.Namespace(**options))
        if code:
            raise SystemExit(code)
