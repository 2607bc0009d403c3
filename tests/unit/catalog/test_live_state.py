"""State builder of the catalog's live kind (no database)."""
from datetime import UTC, datetime

from catalog import live
from catalog.models import PredictorVersion

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_predictor_version_state_keeps_numeric_metrics_only():
    version = PredictorVersion(pk=4, name="p1", architecture="feedforward", status="active", created_at=T0,
                               metrics={"val_mae": 0.1, "validation_workloads": ["a"], "flag": True},
                               training_data={"records": 120})
    data = live.predictor_version_state(version)
    assert data["metrics"] == {"val_mae": 0.1} and data["val_mae"] == 0.1 and data["training_records"] == 120
