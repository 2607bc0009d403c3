"""The live kind `service` (docs/live-updates.md): an active service's row (page.service_rows:
its plan, traffic now against its bound, its replicas with their GPUs and partners) and its
traffic over the last hours, seen by its tenant's members and staff. A stopped service leaves
the kind (a delete).

Sent by `services_changed`, which what writes a service's rows calls inside its transaction (a
traffic report: traffic.py; a round's plan), and along with the job events of its replicas
(`replica_service_changes`, called by scheduler.live for every batch of job events): a replica
placed, moved, started or ended, or given a partner, changes its service's row in the same
batch, so the state a page replays stays the snapshot's whoever moved the replica."""
from gogh_web.events.sending import Change, send_events

from ..models import Job, Service, ServiceState
from .page import service_rows

KIND = "service"


def services_data(services) -> dict[str, dict]:
    services = list(services.select_related("workload", "tenant", "owner").order_by("pk"))
    return {str(row["id"]): row for row in service_rows(services)}


def services_data_by_key(keys: list[str]) -> dict[str, dict]:
    """What the events of these services carry; one gone or stopped is left out (a delete)."""
    return services_data(Service.objects.filter(pk__in=[int(key) for key in keys], state=ServiceState.ACTIVE))


def services_snapshot(viewer) -> dict[str, dict]:
    """The snapshot's part: staff every active service, a member its tenant's, anyone else none."""
    services = Service.objects.filter(state=ServiceState.ACTIVE)
    if not viewer.staff:
        services = services.filter(tenant_id=viewer.tenant_id) if viewer.tenant_id else services.none()
    return services_data(services)


def services_changed(service_ids) -> None:
    """Services whose settings, plan, traffic or replicas changed: one batch of events, each seen
    by its service's tenant and staff, built after the commit from the committed rows."""
    ids = sorted(set(service_ids))
    tenants = dict(Service.objects.filter(pk__in=ids).values_list("pk", "tenant_id"))
    send_events(kind=KIND, keys=ids, data=services_data_by_key, tenant_id={str(i): tenants.get(i) for i in ids})


def replica_service_changes(job_keys) -> list[Change]:
    """The events of the services whose replicas are among these jobs (keys of a batch of job
    events, built under the same lock): one query when none of them is a replica."""
    replicas = Job.objects.filter(pk__in=[int(key) for key in job_keys], service__isnull=False)
    ids = sorted(set(replicas.values_list("service_id", flat=True)))
    if not ids:
        return []
    tenants = dict(Service.objects.filter(pk__in=ids).values_list("pk", "tenant_id"))
    data = services_data_by_key([str(i) for i in ids])
    return [Change(KIND, str(i), data.get(str(i)), tenants.get(i)) for i in ids]
