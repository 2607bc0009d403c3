"""manage.py train_predictor: a cold start trains once; --if-none leaves an active version alone."""
import io

import pytest
from django.core.management import call_command

from catalog.models import PredictorVersion

from .predictors.db_slice import load_slice

pytestmark = pytest.mark.django_db


def test_if_none_trains_only_on_a_cold_start(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    load_slice()
    out = io.StringIO()
    call_command("train_predictor", "--if-none", "--architecture", "structured", stdout=out)
    version = PredictorVersion.objects.get()
    assert version.status == "active" and "validation MAE" in out.getvalue()
    out = io.StringIO()
    call_command("train_predictor", "--if-none", stdout=out)
    assert PredictorVersion.objects.count() == 1 and "nothing to train" in out.getvalue()
