"""Admin for tenants, jobs, allocations, interruptions, solve runs and solver settings (profiling
campaigns and inference services: their packages' admin.py). State changes go through services."""
from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied

from gogh_web.admin_display import RecordAdmin, clipped, figures, rounded

from . import services
from .lifecycle import IllegalTransition
from .models import (
    Allocation,
    ExecutorRun,
    ExecutorSync,
    Job,
    JobInterruption,
    Membership,
    SolveRun,
    SolverConfig,
    SolverConfigChange,
    Tenant,
    TenantEnergyDay,
    TenantQuota,
)
from .profiling import admin as profiling_admin  # noqa: F401 -- registers the campaigns' admin
from .serving import admin as serving_admin  # noqa: F401 -- registers the services' admin
from .tenancy import live as tenancy_live
from .tenancy.selectors import cluster_gpu_types, with_standing


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    raw_id_fields = ["user"]


class TenantQuotaForm(forms.ModelForm):
    class Meta:
        model = TenantQuota
        fields = ["gpu_type", "gpus"]

    def clean_gpu_type(self):
        """As the API: a quota on a type the cluster has no GPU of could never be met."""
        gpu_type = self.cleaned_data["gpu_type"]
        if gpu_type.name not in cluster_gpu_types():
            raise forms.ValidationError(f"The cluster has no GPU of type {gpu_type.name!r}: a quota on it could "
                                        "never be met.")
        return gpu_type


class TenantQuotaInline(admin.TabularInline):
    model = TenantQuota
    form = TenantQuotaForm
    extra = 0


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    """Shares, borrowing, the energy budget and the quotas are edited here (or through the API);
    the usage and this month's energy are the accounting's, shown read-only."""

    list_display = ["name", "slug", "shares", "may_borrow", "energy_budget_kwh_month", "fair_share_factor",
                    "energy_this_month_kwh", "created_at"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    fields = ["name", "slug", "description", "shares", "may_borrow", "energy_budget_kwh_month", "fair_share_factor",
              "decayed_gpu_hours", "decayed_energy_kwh", "energy_today_kwh", "energy_this_month_kwh"]
    readonly_fields = ["fair_share_factor", "decayed_gpu_hours", "decayed_energy_kwh", "energy_today_kwh",
                       "energy_this_month_kwh"]
    inlines = [TenantQuotaInline, MembershipInline]

    def get_queryset(self, request):
        return with_standing(super().get_queryset(request))

    @admin.display(description="fair-share factor", ordering="usage_factor")
    def fair_share_factor(self, tenant):
        return figures(tenant.usage_factor) if tenant.pk else "-"

    @admin.display(description="decayed GPU-hours", ordering="usage_gpu_hours")
    def decayed_gpu_hours(self, tenant):
        return figures(tenant.usage_gpu_hours) if tenant.pk else "-"

    @admin.display(description="decayed energy, kWh", ordering="usage_energy_kwh")
    def decayed_energy_kwh(self, tenant):
        return figures(tenant.usage_energy_kwh) if tenant.pk else "-"

    @admin.display(description="energy today (UTC), kWh", ordering="energy_today_kwh")
    def energy_today_kwh(self, tenant):
        return figures(tenant.energy_today_kwh) if tenant.pk else "-"

    @admin.display(description="energy this month (UTC), kWh", ordering="energy_month_kwh")
    def energy_this_month_kwh(self, tenant):
        return figures(tenant.energy_month_kwh) if tenant.pk else "-"

    def save_related(self, request, form, formsets, change):
        """Open Tenants pages follow the change, once its quotas are saved too (same transaction)."""
        super().save_related(request, form, formsets, change)
        tenancy_live.tenants_changed([form.instance.pk])


@admin.register(TenantEnergyDay)
class TenantEnergyDayAdmin(RecordAdmin):
    """What the accounting wrote: energy and GPU-hours per tenant per UTC day, read-only."""

    list_display = ["day", "tenant", rounded(TenantEnergyDay, "energy_kwh"), rounded(TenantEnergyDay, "gpu_hours")]
    list_filter = ["tenant"]
    date_hierarchy = "day"


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "tenant", "created_at"]
    list_filter = ["tenant"]
    search_fields = ["user__username", "tenant__name"]
    raw_id_fields = ["user"]


class AllocationInline(admin.TabularInline):
    model = Allocation
    fk_name = "job"
    extra = 0
    can_delete = False
    fields = [
        "gpu", "partners", "start", "end", rounded(Allocation, "predicted_throughput"),
        rounded(Allocation, "predicted_power_w"), "power_limit_w", rounded(Allocation, "power_limit_speed"),
        "solve_run",
    ]
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("partners")

    def has_add_permission(self, request, obj=None):
        return False


#: What an interruption shows, in the job's inline and on its own page.
INTERRUPTION_FIELDS = [
    "at", "kind", "reason", "was_running", "steps_done", "resume_step", "steps_lost",
    rounded(JobInterruption, "overhead_s"), "resumed_at", "solve_run",
]


class JobInterruptionInline(admin.TabularInline):
    """The job's interruptions, newest first: a record of what happened, never edited."""

    model = JobInterruption
    extra = 0
    can_delete = False
    fields = INTERRUPTION_FIELDS
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = [
        "id", "name", "workload", "tenant", "owner", "state", "pending_reason_clipped", "priority",
        "min_throughput", "max_gpus", "submitted_at",
    ]
    list_filter = ["state", "tenant", "workload__family", "priority"]
    search_fields = ["name", "workload__name", "owner__username", "tenant__name"]
    list_select_related = ["workload", "tenant", "owner"]
    date_hierarchy = "submitted_at"
    # What the job is, whose it is and what it was promised are read-only: an edit here bypasses
    # the services, so no live event would tell the old tenant's pages that the job left them,
    # and an owner outside the job's tenant could no longer see it. Priority, name, deadline
    # and command stay editable until the job ends (has_change_permission). The environment is
    # neither shown nor edited: see environment_keys.
    readonly_fields = [
        "workload", "tenant", "owner", "min_throughput", "max_gpus", "memory_gb",
        "state", "pending_reason", "state_reason", "steps_done", "submitted_at", "placed_at",
        "started_at", "finished_at", "idempotency_key", "request_fingerprint", "environment_keys",
        "preemption_grace_s", "checkpoint_step", "checkpoint_path", "checkpoint_at", "resume_step", "current_step",
        "restarts", "steps_lost", "energy_kwh", "handover_until", "probe_gpu_type", "probe_until", "probes",
        "last_probe_at", "campaign", "profiling_cases",
    ]
    exclude = ["environment"]
    inlines = [AllocationInline, JobInterruptionInline]
    actions = ["cancel_jobs"]

    def has_change_permission(self, request, obj=None):
        """An ended job is a record of what ran: its page is read-only and a POST to it is refused
        (403), so its priority, steps or command can no longer be made to say something else."""
        return super().has_change_permission(request, obj) and not (obj is not None and obj.is_terminal)

    def save_model(self, request, obj, form, change):
        """Write only the fields the form changed, under the job's lock, and refuse if the job
        ended after the page was loaded: saving the whole row read then would write back its old
        state and progress over what its agent reported since."""
        if not change:
            super().save_model(request, obj, form, change)
            return
        if Job.objects.select_for_update().get(pk=obj.pk).is_terminal:
            raise PermissionDenied("The job has ended; it can no longer be changed.")
        if form.changed_data:
            obj.save(update_fields=[*form.changed_data, "updated_at"])

    @admin.display(description="Pending reason", ordering="pending_reason")
    def pending_reason_clipped(self, job):
        """A sentence per row made the list several lines a row: its first words, the whole in the title."""
        return clipped(job.pending_reason)

    @admin.display(description="Environment")
    def environment_keys(self, job):
        """The variables the job sets, values hidden: they are often credentials (a database
        URL, AWS_SECRET_ACCESS_KEY) that only the agent of the node running the job may read."""
        return ", ".join(f"{key}=(hidden)" for key in sorted(job.environment)) or "-"

    @admin.action(description="Cancel selected jobs")
    def cancel_jobs(self, request, queryset):
        cancelled, refused = 0, []
        for job in queryset:
            try:
                services.job_cancel(job=job, by=request.user)
                cancelled += 1
            except IllegalTransition as exc:
                refused.append(f"job {job.pk}: {exc}")
        if cancelled:
            self.message_user(request, f"Cancelled {cancelled} job(s).", messages.SUCCESS)
        if refused:
            self.message_user(request, "Not cancelled: " + "; ".join(refused), messages.WARNING)


@admin.register(Allocation)
class AllocationAdmin(admin.ModelAdmin):
    list_display = [
        "id", "job", "gpu", "partner_ids", "start", "end", rounded(Allocation, "predicted_throughput"),
        rounded(Allocation, "predicted_power_w"), "power_limit_w", rounded(Allocation, "power_limit_speed"),
    ]
    list_filter = ["gpu__gpu_type", "gpu__node"]
    search_fields = ["job__name", "job__workload__name", "gpu__uuid", "gpu__node__hostname"]
    list_select_related = ["job__workload", "gpu__node", "gpu__gpu_type"]
    raw_id_fields = ["job", "gpu", "partners", "solve_run"]
    date_hierarchy = "start"

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("partners")

    @admin.display(description="Partners")
    def partner_ids(self, allocation):
        """The ids of the jobs sharing the GPU (from the prefetch: one query for the page)."""
        return ", ".join(str(job.pk) for job in sorted(allocation.partners.all(), key=lambda job: job.pk)) or "-"


@admin.register(JobInterruption)
class JobInterruptionAdmin(RecordAdmin):
    """Every move, preemption and failure that stopped a job, with why and the work it lost:
    read-only, as the services wrote it (a changed row would no longer match the job's counters)."""

    list_display = [
        "id", "at", "job", "kind", "reason_clipped", "was_running", "steps_done", "resume_step", "steps_lost",
        rounded(JobInterruption, "overhead_s"), "solve_run",
    ]
    list_filter = ["kind", "at", "was_running"]
    search_fields = ["reason", "job__name", "job__workload__name"]
    list_select_related = ["job__workload", "solve_run"]
    date_hierarchy = "at"
    fields = ["job", *INTERRUPTION_FIELDS]
    readonly_fields = fields

    @admin.display(description="Reason", ordering="reason")
    def reason_clipped(self, interruption):
        return clipped(interruption.reason)


@admin.register(SolveRun)
class SolveRunAdmin(admin.ModelAdmin):
    list_display = [
        "id", "started_at", "trigger", "solver", "status", "dry_run", rounded(SolveRun, "objective"),
        rounded(SolveRun, "gap"), rounded(SolveRun, "duration_s"), "num_jobs", "num_placed", "num_gpus",
        rounded(SolveRun, "power_w"), rounded(SolveRun, "energy_weight"), "num_variables", "num_constraints",
        "fallback_reason",
    ]
    list_filter = ["status", "solver", "trigger", "dry_run"]
    search_fields = ["solver", "fallback_reason"]
    date_hierarchy = "started_at"


class SolverConfigChangeInline(admin.TabularInline):
    model = SolverConfigChange
    extra = 0
    can_delete = False
    fields = ["changed_at", "changed_by", "field", "old_value", "new_value"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(SolverConfig)
class SolverConfigAdmin(admin.ModelAdmin):
    """The one settings row; saving goes through the service, which writes the audit trail."""

    inlines = [SolverConfigChangeInline]
    readonly_fields = ["updated_at"]

    def has_add_permission(self, request):
        return not SolverConfig.objects.exists()

    def has_delete_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        values = {name: form.cleaned_data[name] for name in form.changed_data}
        saved = services.solver_config_update(by=request.user, values=values)
        obj.pk = saved.pk


@admin.register(SolverConfigChange)
class SolverConfigChangeAdmin(RecordAdmin):
    list_display = ["changed_at", "changed_by", "field", "old_value", "new_value"]
    list_filter = ["field", "changed_by"]
    date_hierarchy = "changed_at"



@admin.register(ExecutorRun)
class ExecutorRunAdmin(RecordAdmin):
    """What the control plane submitted to a pushing executor (Slurm) and what became of each
    run: read-only, as the executor sync wrote it (a changed row would no longer match the
    executor's truth, and the next sync would act on it)."""

    list_display = ["id", "executor", "external_id", "job", "node", "gpu_type", "num_gpus", "shares", "state",
                    "native_state", "exit_code", "submitted_at", "stop_requested_at", "settled_at"]
    list_filter = ["executor", "state", "node"]
    search_fields = ["external_id", "job__name", "reason", "stop_reason"]
    list_select_related = ["job", "node"]
    date_hierarchy = "submitted_at"


@admin.register(ExecutorSync)
class ExecutorSyncAdmin(RecordAdmin):
    """Each sync with a pushing executor: what it did, or the command that failed and why."""

    list_display = ["id", "executor", "started_at", "ok", "command", rounded(ExecutorSync, "cpu_s"), "stats"]
    list_filter = ["executor", "ok"]
    search_fields = ["command", "error"]
    date_hierarchy = "started_at"
