"""Dashboard pages: sign-in required, server-rendered first (a reload shows the truth), with
the data each page's script needs embedded as JSON; live.js keeps them current."""
from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from catalog.models import Workload
from scheduler.models.solver_config import MAX_ENERGY_WEIGHT, MAX_LOAD_WINDOW, MAX_WATTS_SETTING
from scheduler.selectors import tenant_of
from scheduler.serving.live import services_data
from scheduler.serving.page import CHART_HOURS, active_services_visible_to
from scheduler.tenancy.live import CHART_DAYS, tenants_data
from scheduler.tenancy.selectors import tenant_overviews, tenants_visible_to

from . import selectors
from .tradeoff import DEFAULT_SURPLUS_VALUE_W


@login_required
def cluster(request):
    overview = selectors.cluster_overview()
    page_data = {"gpus": overview["gpus"], "nodes": overview["nodes"], "profiles": overview["profiles"],
                 "stale_s": overview["stale_s"], "power_curves": overview["power_curves"]}
    return render(request, "dashboard/cluster.html", {"page": "cluster", **overview, "page_data": page_data})


@login_required
def jobs(request):
    return render(
        request,
        "dashboard/jobs.html",
        {
            "page": "jobs",
            "jobs": selectors.job_rows(request.user),
            "can_submit": tenant_of(request.user) is not None,
            "workloads": Workload.objects.order_by("name").values_list("name", flat=True),
        },
    )


@login_required
def predictions(request):
    return render(
        request,
        "dashboard/predictions.html",
        {
            "page": "predictions",
            "versions": selectors.predictor_versions(),
            "mae_series": selectors.validation_mae_series(),
            "errors": selectors.live_prediction_errors(request.user),
            "coverage": selectors.catalog_coverage(),
        },
    )


@login_required
def solver(request):
    config = selectors.solver_config()
    return render(
        request,
        "dashboard/solver.html",
        {
            "page": "solver",
            "runs": selectors.recent_solve_runs(),
            "runs_kept": selectors.solve_runs_kept(),
            "config": config,
            "config_fields": [
                (f.verbose_name, getattr(config, f.name)) for f in config._meta.fields if f.name not in ("id",)
            ],
            "changes": selectors.solver_config_changes(),
        },
    )


@login_required
def tradeoff(request):
    """The form starts from the stored settings (apply sends only what the user changed)."""
    config = selectors.solver_config()
    settings = {field: getattr(config, field) for field in selectors.TRADEOFF_FIELDS}
    return render(request, "dashboard/tradeoff.html", {
        "page": "tradeoff", "settings": settings, "can_apply": request.user.is_staff,
        "default_surplus_value_w": DEFAULT_SURPLUS_VALUE_W,
        "limits": {"weight": MAX_ENERGY_WEIGHT, "window": MAX_LOAD_WINDOW, "surplus": MAX_WATTS_SETTING},
    })


@login_required
def tenants(request):
    """Staff see every tenant, a member its own. The rows come rendered; the script follows
    the `tenant` kind, and works out the GPUs in use from the `job` and `gpu` kinds."""
    visible = list(tenants_visible_to(request.user).order_by("name"))
    return render(request, "dashboard/tenants.html", {
        "page": "tenants",
        "tenants": tenant_overviews(visible),
        "chart_days": CHART_DAYS,
        "page_data": {"tenants": tenants_data(visible), "chart_days": CHART_DAYS},
    })


@login_required
def services(request):
    """Staff see every active service, a member its tenant's. The rows come rendered; the script
    follows the `service` kind (traffic reports, plans, replicas placed or moved) and draws each
    service's request rate and P99 against its bound."""
    data = services_data(active_services_visible_to(request.user))
    rows = sorted(data.values(), key=lambda row: (row["name"], row["id"]))
    return render(request, "dashboard/services.html", {
        "page": "services",
        "services": rows,
        "chart_hours": CHART_HOURS,
        "page_data": {"services": data, "chart_hours": CHART_HOURS},
    })
