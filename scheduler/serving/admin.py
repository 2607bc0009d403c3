"""Admin of inference services (docs/services.md): a service's row is listed with its state,
bound, traffic and replicas; what the rounds derive (forecast, calibration, T_min, target, SLO
note) and what its replicas report (rate, P99) are read-only, and so is what it is (workload,
tenant, owner, bound, replicas, batch): those go through the services API, which checks that a
bound can be met and plans the replicas. Its traffic reports are records, read-only."""
from django.contrib import admin
from django.db.models import Count, Q

from gogh_web.admin_display import RecordAdmin, clipped, rounded

from ..lifecycle import JobState
from ..models import Service, ServiceTraffic
from .live import services_changed

DERIVED = [
    "request_rate_rps", "p99_ms", "forecast_rps", "calibration", "speed_factor", "replicas_target",
    "replica_min_throughput", "slo_note", "planned_at",
]


@admin.register(Service)
class ServiceAdmin(admin.ModelAdmin):
    list_display = [
        "id", "name", "tenant", "workload", "state", rounded(Service, "latency_bound_ms"),
        rounded(Service, "request_rate_rps"), rounded(Service, "p99_ms"), "replicas", "slo_note_clipped", "created_at",
    ]
    list_filter = ["state", "tenant", "workload"]
    search_fields = ["name", "workload__name", "tenant__name", "owner__username"]
    list_select_related = ["tenant", "workload"]
    date_hierarchy = "created_at"
    # Name and priority stay editable (as a job's); the environment is neither shown nor edited,
    # as a job's (environment_keys).
    readonly_fields = [
        "workload", "tenant", "owner", "state", "latency_bound_ms", "min_replicas", "max_replicas", "batch_size",
        "expected_rate_rps", "replicas", *DERIVED, "environment_keys", "created_at", "updated_at", "stopped_at",
    ]
    exclude = ["environment"]

    def get_queryset(self, request):
        running = Count("replicas", filter=Q(replicas__state=JobState.RUNNING.value))
        return super().get_queryset(request).annotate(replicas_live=running)

    def has_add_permission(self, request):
        """A service starts through the API (POST /api/services/), which checks its bound and plans its replicas."""
        return False

    def has_delete_permission(self, request, obj=None):
        """A service is stopped, not deleted: its replicas and traffic stay the record of what it served."""
        return False

    @admin.display(description="Replicas target / live (min-max)", ordering="replicas_target")
    def replicas(self, service):
        live = getattr(service, "replicas_live", None)
        return f"{service.replicas_target} / {live if live is not None else '-'} ({service.min_replicas}-" \
               f"{service.max_replicas})"

    @admin.display(description="SLO note", ordering="slo_note")
    def slo_note_clipped(self, service):
        return clipped(service.slo_note)

    @admin.display(description="Environment")
    def environment_keys(self, service):
        return ", ".join(f"{key}=(hidden)" for key in sorted(service.environment)) or "-"

    def save_model(self, request, obj, form, change):
        """Write only what the form changed (the rounds and the reports write the rest meanwhile),
        and tell open Services pages."""
        if form.changed_data:
            obj.save(update_fields=[*form.changed_data, "updated_at"])
            services_changed([obj.pk])


@admin.register(ServiceTraffic)
class ServiceTrafficAdmin(RecordAdmin):
    """What a service's replicas reported of their traffic, as the traffic service stored it."""

    list_display = ["id", "at", "service", "job", rounded(ServiceTraffic, "request_rate_rps"),
                    rounded(ServiceTraffic, "p99_ms")]
    list_filter = ["service"]
    list_select_related = ["service__workload", "job__workload"]
    raw_id_fields = ["service", "job"]
    date_hierarchy = "at"
