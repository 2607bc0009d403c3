"""manage.py approve_node HOST... | --pending: admit registered nodes from the shell.

For automation that registers a node and then approves it, without the admin or a staff token.
Host names not registered yet cannot be approved ahead: list them in GOGH_AUTO_APPROVE_NODES
instead (docs/inventory.md). The approval is recorded without an operator (approved_by empty).
"""
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from telemetry import selectors
from telemetry.registration_rules import normalize_hostname
from telemetry.services.admission import node_approve


class Command(BaseCommand):
    help = (
        "Approve the registered nodes HOST... so that they receive jobs (all or none: an unknown host name "
        "approves nothing). --pending lists the nodes waiting for approval. See docs/inventory.md."
    )

    def add_arguments(self, parser):
        parser.add_argument("hosts", nargs="*", metavar="HOST", help="Host names of registered nodes.")
        parser.add_argument("--pending", action="store_true", help="List the nodes waiting for approval.")

    def handle(self, *args, hosts, pending, **options):
        if pending:
            self._list_pending()
            return
        if not hosts:
            raise CommandError("name at least one host (or --pending to list the nodes waiting for approval)")
        wanted = sorted({normalize_hostname(host) for host in hosts})
        with transaction.atomic():
            nodes = {node.hostname: node for node in selectors.nodes().filter(hostname__in=wanted)}
            unknown = [host for host in wanted if host not in nodes]
            if unknown:
                raise CommandError(
                    f"not registered: {', '.join(unknown)}; nothing approved (pre-approve expected host names "
                    "with GOGH_AUTO_APPROVE_NODES)"
                )
            newly = [host for host in wanted if nodes[host].approved_at is None]
            for host in newly:
                node_approve(node=nodes[host], by=None)
        already = [host for host in wanted if host not in newly]
        self.stdout.write(self.style.SUCCESS(f"approved: {', '.join(newly) or 'none'}"))
        if already:
            self.stdout.write(f"already approved: {', '.join(already)}")

    def _list_pending(self) -> None:
        waiting = selectors.nodes().filter(approved_at__isnull=True).select_related("agent").order_by("hostname")
        for node in waiting:
            agent = node.agent.get_username() if node.agent else "-"
            self.stdout.write(f"{node.hostname}  agent {agent}  registered {node.registered_at:%Y-%m-%d %H:%M:%S} UTC")
        if not waiting:
            self.stdout.write("no node is waiting for approval")
