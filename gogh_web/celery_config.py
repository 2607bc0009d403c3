"""Where Celery's messages and results go, derived from the broker URL and var/.

Shared by settings.py and by anything that must talk to the same broker from outside Django
(a test acting as a client of a real worker), so the folder layout is defined once.
"""
from pathlib import Path

EMBEDDED_BROKER = "filesystem://"


def broker_config(broker_url: str, var_dir: Path, result_backend: str | None = None) -> dict:
    """Celery settings (lower-case names) for a broker URL; the embedded one lives in var/celery."""
    if not broker_url.startswith("filesystem://"):
        return {"broker_url": broker_url, "result_backend": result_backend or broker_url}
    root = var_dir / "celery"
    for folder in ("queue", "processed", "results", "control"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    return {
        "broker_url": broker_url,
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
