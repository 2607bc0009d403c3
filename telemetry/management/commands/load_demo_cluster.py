"""manage.py load_demo_cluster: register the demo cluster (telemetry.demo_inventory)."""
from collections import Counter

from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from telemetry import selectors, services
from telemetry.demo_inventory import DEMO_AGENT_USERNAME, DEMO_NODES, demo_gpu_types
from telemetry.services.admission import node_approve


class Command(BaseCommand):
    help = (
        "Register the demo cluster: two nodes with 8 K80 GPUs each (four dual-GPU boards), one "
        "with 4 P100 and one with 8 V100, GPUs split over two PCIe switches / NUMA nodes. The "
        f"nodes belong to the agent account '{DEMO_AGENT_USERNAME}' (created with the permission "
        "telemetry.act_as_agent if missing), exactly as if their agents had registered them, and are "
        "approved (they receive jobs). "
        "Idempotent: running it again leaves the same nodes and GPUs. Needs the GPU types k80, p100 and v100: "
        "run 'manage.py load_reference_catalog' first."
    )

    def handle(self, *args, **options):
        missing = [name for name in demo_gpu_types() if name not in selectors.gpu_types_by_name()]
        if missing:
            raise CommandError(
                f"GPU type(s) {', '.join(missing)} do not exist yet; run 'manage.py load_reference_catalog' "
                "first, then this command again."
            )
        created = 0
        try:
            with transaction.atomic():
                agent = services.agent_account_ensure(username=DEMO_AGENT_USERNAME)
                for demo_node in DEMO_NODES:
                    node, is_new = services.node_register(agent_user=agent, **demo_node.registration())
                    node_approve(node=node, by=None)  # the operator who loads the demo admits it
                    created += is_new
        except (PermissionDenied, ValidationError) as exc:
            raise CommandError(f"Could not register the demo cluster: {exc}") from exc
        self._print_summary(created)

    def _print_summary(self, created: int) -> None:
        hostnames = [demo_node.hostname for demo_node in DEMO_NODES]
        nodes = selectors.nodes_with_gpus().filter(hostname__in=hostnames).order_by("hostname")
        rows = [("node", "cell", "state", "GPUs", "type", "PCIe switch / NUMA: GPU indexes")]
        per_type = Counter()
        for node in nodes:
            gpus = list(node.gpus.all())
            per_type.update(gpu.gpu_type.name for gpu in gpus)
            groups: dict[tuple, list[int]] = {}
            for gpu in gpus:
                groups.setdefault((gpu.pcie_switch, gpu.numa_node), []).append(gpu.index)
            layout = "; ".join(f"{switch}/numa{numa}: {_span(indexes)}" for (switch, numa), indexes in groups.items())
            types = ",".join(sorted({gpu.gpu_type.name for gpu in gpus}))
            rows.append((node.hostname, node.cell, node.state, str(len(gpus)), types, layout))
        widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
        for row in rows:
            self.stdout.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
        totals = ", ".join(f"{count} {name}" for name, count in sorted(per_type.items()))
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo cluster: {len(rows) - 1} nodes ({created} new), {sum(per_type.values())} GPUs ({totals}); "
                f"agent account '{DEMO_AGENT_USERNAME}'."
            )
        )


def _span(indexes: list[int]) -> str:
    """[0, 1, 2, 3] -> '0-3'; anything not contiguous is listed."""
    ordered = sorted(indexes)
    if ordered == list(range(ordered[0], ordered[-1] + 1)) and len(ordered) > 1:
        return f"{ordered[0]}-{ordered[-1]}"
    return ",".join(map(str, ordered))
