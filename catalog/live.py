"""The catalog's live kind, `predictor_version` (docs/live-updates.md): the dict that both the
snapshot and the events carry, the snapshot's part, and what services call when versions change.
"""
from functools import partial

from gogh_web.events.sending import send_event
from gogh_web.events.state import iso, number

from .models import PredictorVersion


def predictor_version_state(version) -> dict:
    """A predictor version: its numeric metrics (not the held-out name lists) and what it trained on."""
    metrics = {
        k: number(v) for k, v in version.metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
    }
    return {
        "id": version.pk,
        "name": version.name,
        "architecture": version.architecture,
        "status": version.status,
        "val_mae": number(version.metrics.get("val_mae")),
        "metrics": metrics,
        "training_records": version.training_data.get("records"),
        "parent_id": version.parent_id,
        "note": version.note,
        "created_at": iso(version.created_at),
    }


def predictor_version_data(version_id: int) -> dict | None:
    version = PredictorVersion.objects.filter(pk=version_id).first()
    return predictor_version_state(version) if version else None


def predictor_versions_snapshot(viewer) -> dict[str, dict]:
    """Every version, for every viewer (cluster-wide)."""
    return {str(v.pk): predictor_version_state(v) for v in PredictorVersion.objects.all()}


def predictor_versions_changed(version_ids) -> None:
    """Versions stored or whose status changed: an event each, built after the commit."""
    for version_id in sorted(set(version_ids)):
        send_event(kind="predictor_version", key=version_id, data=partial(predictor_version_data, version_id))
