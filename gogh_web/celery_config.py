"""Where Celery's messages and results go, derived from the broker URL and var/.

Shared by settings.py and by anything that must talk to the same broker from outside Django
(a test acting as a client of a real worker), so the folder layout is defined once.
"""
from pathlib import Path

from .broker_transport import TRANSPORT

EMBEDDED_BROKER = "filesystem://"
#: The embedded broker's URL as kombu wants it: the filesystem transport has no host, but a URL
#: without one makes kombu warn "No hostname was supplied" at every process start.
EMBEDDED_BROKER_URL = "filesystem://localhost//"
#: The queues (docs/architecture.md): a backlog of predictions or maintenance never delays a
#: round. "celery", Celery's default, takes everything not routed (trade-off sweep points).
#: A worker started without -Q consumes all of them.
ROUNDS, PREDICTIONS, MAINTENANCE, DEFAULT_QUEUE = "rounds", "predictions", "maintenance", "celery"
TASK_QUEUES = (DEFAULT_QUEUE, ROUNDS, PREDICTIONS, MAINTENANCE)
TASK_ROUTES = {
    "scheduler.tasks.scheduling_round": {"queue": ROUNDS},
    "scheduler.tasks.solve_cell": {"queue": ROUNDS},
    "scheduler.tasks.job_predict": {"queue": PREDICTIONS},
    "catalog.tasks.prediction_refine": {"queue": PREDICTIONS},
    "catalog.tasks.predictor_retrain": {"queue": PREDICTIONS},
    "catalog.tasks.predictor_retrain_if_due": {"queue": PREDICTIONS},
    "scheduler.tasks.predictions_reconcile": {"queue": MAINTENANCE},
    "scheduler.tasks.accounting_pass": {"queue": MAINTENANCE},
    "scheduler.tasks.gpu_speeds_refresh": {"queue": MAINTENANCE},
    # Beside the rounds, not behind P1 requests: a sync expires after its interval, and on the
    # maintenance worker a burst of submissions' P1 tasks made every sync expire unrun for minutes
    # (bench_slurm_latency: decision -> RUNNING median 7.0 s there, 1.2 s here).
    "scheduler.tasks.executor_sync": {"queue": ROUNDS},
    "telemetry.tasks.*": {"queue": MAINTENANCE},
    "gogh_web.events.tasks.events_prune": {"queue": MAINTENANCE},
    "gogh_web.outbox.tasks.outbox_drain": {"queue": MAINTENANCE},
}


def broker_config(broker_url: str, var_dir: Path, result_backend: str | None = None) -> dict:
    """Celery settings (lower-case names) for a broker URL; the embedded one lives in var/celery."""
    if not broker_url.startswith("filesystem://"):
        return {"broker_url": broker_url, "result_backend": result_backend or broker_url}
    if broker_url == EMBEDDED_BROKER:
        broker_url = EMBEDDED_BROKER_URL
    root = var_dir / "celery"
    for folder in ("queue", "processed", "results", "control"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    return {
        "broker_url": broker_url,
        # kombu's filesystem transport with messages written whole (gogh_web/broker_transport.py).
        "broker_transport": TRANSPORT,
        "broker_transport_options": {
            "data_folder_in": str(root / "queue"),
            "data_folder_out": str(root / "queue"),
            "processed_folder": str(root / "processed"),
            "store_processed": False,
            # Exchange tables for broadcast (remote control); kombu's default is ./control.
            "control_folder": str(root / "control"),
        },
        "result_backend": result_backend or f"file://{root / 'results'}",
    }
