"""Dashboard pages: sign-in required, server-rendered first (a reload shows the truth), with
the data each page's script needs embedded as JSON; live.js keeps them current."""
from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from catalog.models import Workload
from scheduler.selectors import tenant_of

from . import selectors
from .api import settings_data
from .tradeoff import surplus_value_w


@login_required
def cluster(request):
    overview = selectors.cluster_overview()
    gpus = [{**g, "sampled_at": g["sampled_at"].isoformat() if g["sampled_at"] else None} for g in overview["gpus"]]
    return render(request, "dashboard/cluster.html", {"page": "cluster", **overview, "gpus_json": gpus})


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
            "config": config,
            "config_fields": [(f.verbose_name, getattr(config, f.name)) for f in config._meta.fields if f.name not in ("id",)],
            "changes": selectors.solver_config_changes(),
        },
    )


@login_required
def tradeoff(request):
    settings = settings_data(selectors.solver_config())
    # the form starts where the sweep is: surplus at its default when the operator set none
    settings["throughput_value_w"] = surplus_value_w(settings["throughput_value_w"])
    return render(request, "dashboard/tradeoff.html", {"page": "tradeoff", "settings": settings, "can_apply": request.user.is_staff})
