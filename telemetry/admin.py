"""Admin for nodes and GPUs. Agents own what they report, so those fields are read-only here;
state changes and approvals go through services, as they do from the API (which also write the
approvals to the node's history)."""
from django.contrib import admin, messages
from django.db.models import Count

from gogh_web.admin_display import rounded

from . import services
from .lifecycle import IllegalTransition
from .models import Gpu, GpuPowerCurve, GpuSample, GpuSampleMinute, GpuState, Node, NodeState
from .services.admission import node_approve, node_revoke

_GPU_REPORTED = ["index", "uuid", "gpu_type", "product_name", "pci_bus_id", "pcie_switch", "numa_node", "memory_gb"]
#: What the agent reports of the GPU's power limits (docs/agent.md), read-only.
_GPU_POWER_LIMIT = ["power_limit_min_w", "power_limit_max_w", "power_limit_default_w", "power_limit_w",
                    "power_limit_error"]


def _set_states(modeladmin, request, objects, set_state, state: str, reason: str, done: str) -> None:
    """Move each selected object to `state` through the service `set_state`; report what was
    done and what the rules refused."""
    changed = 0
    for obj in objects:
        try:
            set_state(obj, state=state, reason=reason)
            changed += 1
        except IllegalTransition as exc:
            modeladmin.message_user(request, f"{obj}: {exc}", messages.WARNING)
    if changed:
        modeladmin.message_user(request, f"{changed} {done}.", messages.SUCCESS)


def _node_set_state(node, **change):
    services.node_set_state(node=node, **change)


def _gpu_set_state(gpu, **change):
    services.gpu_set_state(gpu=gpu, **change)


class GpuInline(admin.TabularInline):
    model = Gpu
    extra = 0
    can_delete = False
    fields = [*_GPU_REPORTED, "state", "state_reason", "external_holder", "power_limit_w", "power_limit_error"]
    readonly_fields = fields
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


class ApprovalFilter(admin.SimpleListFilter):
    title = "approval"
    parameter_name = "approval"

    def lookups(self, request, model_admin):
        return [("pending", "Pending"), ("approved", "Approved")]

    def queryset(self, request, queryset):
        if self.value() in ("pending", "approved"):
            return queryset.filter(approved_at__isnull=self.value() == "pending")
        return queryset


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = [
        "hostname", "state", "approved", "state_reason", "managed_by", "cell", "gpu_count", "last_heartbeat", "agent",
    ]
    list_filter = [ApprovalFilter, "state", "managed_by", "cell"]
    search_fields = ["hostname"]
    list_select_related = ["agent"]
    raw_id_fields = ["agent"]
    readonly_fields = [
        "hostname", "labels", "cell", "state", "state_reason", "managed_by", "approved_at", "approved_by",
        "agent_version", "last_heartbeat", "registered_at", "updated_at", "samples_dropped",
    ]
    inlines = [GpuInline]
    actions = ["approve", "revoke", "drain", "undrain", "mark_down"]

    def has_add_permission(self, request):
        return False  # nodes come from their agents' registrations

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(gpu_count=Count("gpus"))

    @admin.display(description="GPUs", ordering="gpu_count")
    def gpu_count(self, node):
        return node.gpu_count

    @admin.display(description="Approved", boolean=True, ordering="approved_at")
    def approved(self, node):
        return node.approved_at is not None

    @admin.action(description="Approve the selected nodes (they receive jobs)")
    def approve(self, request, queryset):
        pending = list(queryset.filter(approved_at__isnull=True))
        for node in pending:
            node_approve(node=node, by=request.user)
        self.message_user(request, f"{len(pending)} approved.", messages.SUCCESS)

    @admin.action(description="Revoke the approval of the selected nodes (their jobs go back to pending)")
    def revoke(self, request, queryset):
        approved = list(queryset.filter(approved_at__isnull=False))
        for node in approved:
            node_revoke(node=node, by=request.user)
        self.message_user(request, f"{len(approved)} revoked.", messages.SUCCESS)

    @admin.action(description="Drain the selected nodes")
    def drain(self, request, queryset):
        reason = f"drained by {request.user.username}"
        _set_states(self, request, queryset, _node_set_state, NodeState.DRAINING, reason, "drained")

    @admin.action(description="Undrain the selected nodes")
    def undrain(self, request, queryset):
        _set_states(self, request, queryset, _node_set_state, NodeState.READY, "", "undrained")

    @admin.action(description="Mark the selected nodes down")
    def mark_down(self, request, queryset):
        reason = f"marked down by {request.user.username}"
        _set_states(self, request, queryset, _node_set_state, NodeState.DOWN, reason, "marked down")


@admin.register(Gpu)
class GpuAdmin(admin.ModelAdmin):
    list_display = [
        "node", "index", "gpu_type", "state", "speed_factor", "slow", "external_holder", "power_limit_w",
        "pcie_switch", "numa_node", "uuid",
    ]
    list_filter = ["gpu_type", "state"]
    search_fields = ["uuid", "node__hostname"]
    list_select_related = ["node", "gpu_type"]
    # Learnt (speed: scheduler.gpu_speed_learning) or reported (health, curve, power limits): read-only here.
    readonly_fields = [
        "node", *_GPU_REPORTED, "state", "state_reason", "external_holder", *_GPU_POWER_LIMIT, "speed_factor",
        "speed_factor_std", "speed_observations", "speed_flag", "speed_flagged_at", "health", "power_curve_fit",
    ]
    actions = ["disable", "enable", "clear_at_risk"]

    def has_add_permission(self, request):
        return False  # GPUs come from their agents' registrations

    @admin.display(boolean=True, description="slow")
    def slow(self, gpu):
        return bool(gpu.speed_flag)

    @admin.display(description="power curve")
    def power_curve_fit(self, gpu):
        """Its fitted curve (docs/gpu_health.md), or why there is none."""
        curve = GpuPowerCurve.objects.filter(gpu=gpu).first()
        if curve is None:
            return "none fitted yet"
        points = ", ".join(f"{u:.2f}: {w:.0f} W" for u, w in curve.points)
        spread = f"\u00b1{curve.residual_std_w:.1f} W, {curve.samples} samples"
        return f"{points} ({spread}, fitted {curve.fitted_at:%Y-%m-%d %H:%M})"

    @admin.action(description="Disable the selected GPUs (no new work)")
    def disable(self, request, queryset):
        reason = f"disabled by {request.user.username}"
        _set_states(self, request, queryset, _gpu_set_state, GpuState.DISABLED, reason, "disabled")

    @admin.action(description="Enable the selected GPUs (healthy again)")
    def enable(self, request, queryset):
        _set_states(self, request, queryset, _gpu_set_state, GpuState.HEALTHY, "", "enabled")

    @admin.action(description="Clear the at-risk flag of the selected GPUs (their counts now are the baseline)")
    def clear_at_risk(self, request, queryset):
        done = 0
        for gpu in queryset:
            try:
                services.gpu_at_risk_clear(gpu=gpu, by=request.user)
                done += 1
            except services.NotAtRisk as exc:
                self.message_user(request, str(exc), messages.WARNING)
        if done:
            self.message_user(request, f"{done} cleared.", messages.SUCCESS)


class _ReadOnlyAdmin(admin.ModelAdmin):
    """Samples come from agents and the downsampling task; operators only look."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(GpuSample)
class GpuSampleAdmin(_ReadOnlyAdmin):
    list_display = [
        "gpu", "ts", *(rounded(GpuSample, field) for field in (
            "power_w", "utilization", "temperature_c", "sm_clock_mhz", "memory_used_mb")),
    ]
    list_filter = ["gpu__node"]
    list_select_related = ["gpu__node", "gpu__gpu_type"]
    date_hierarchy = "ts"


@admin.register(GpuSampleMinute)
class GpuSampleMinuteAdmin(_ReadOnlyAdmin):
    list_display = [
        "gpu", "minute", "samples", *(rounded(GpuSampleMinute, field) for field in (
            "power_w_mean", "power_w_max", "utilization_mean", "temperature_c_max")),
    ]
    list_filter = ["gpu__node"]
    list_select_related = ["gpu__node", "gpu__gpu_type"]
    date_hierarchy = "minute"
