"""manage.py demo_setup: `make demo`'s set-up in one process; a second run skips what is done
and says so, changes nothing, and prints the same login."""
import io
import re

import pytest
from django.core.management import call_command

from catalog.models import Measurement, PredictorStatus, PredictorVersion
from gogh_web.management.commands.demo_setup import static_sources_fingerprint
from telemetry.models import Gpu, Node

pytestmark = pytest.mark.django_db


@pytest.fixture
def small_static(settings, tmp_path):
    """One static source file and a plain storage, so that collecting takes milliseconds."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "app.css").write_text("body { margin: 0 }")
    settings.VAR_DIR = tmp_path
    settings.STATICFILES_DIRS = [source]
    settings.STATICFILES_FINDERS = ["django.contrib.staticfiles.finders.FileSystemFinder"]
    settings.STORAGES = {**settings.STORAGES,
                         "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}
    settings.STATIC_ROOT = tmp_path / "static"
    settings.STATIC_ROOT.mkdir()
    return source


def run(*args) -> str:
    out = io.StringIO()
    call_command("demo_setup", *args, stdout=out)
    return out.getvalue()


def token(output: str) -> str:
    return re.search(r"Token: +(\w+)", output).group(1)


def test_a_second_run_skips_each_done_step_changes_nothing_and_prints_the_same_login(small_static):
    # An active predictor stands in for the ~10 s training (train_predictor's own tests train).
    PredictorVersion.objects.create(name="p1", architecture="structured", status=PredictorStatus.ACTIVE)
    first = run()
    assert "static files: collecting" in first and "demo cluster: registering" in first
    assert (small_static.parent / "static" / "app.css").exists()
    counts = (Measurement.objects.count(), Node.objects.count(), Gpu.objects.count())

    second = run("--port", "8123")
    for done in ("migrations already applied", "static files: sources unchanged",
                 "an active p1 version exists", "4 nodes are registered and approved"):
        assert done in second
    assert "10830 unchanged" in second  # the catalog is compared with its file, nothing rewritten
    assert token(second) == token(first)
    assert "http://127.0.0.1:8000/admin/" in first and "http://127.0.0.1:8123/admin/" in second
    assert (Measurement.objects.count(), Node.objects.count(), Gpu.objects.count()) == counts
    assert PredictorVersion.objects.count() == 1

    # The record of what was collected lives in the folder: removing the folder collects again.
    for path in (small_static.parent / "static").iterdir():
        path.unlink()
    assert "static files: collecting" in run()
    assert (small_static.parent / "static" / "app.css").exists()


def test_a_changed_or_added_static_source_changes_the_fingerprint(small_static):
    before = static_sources_fingerprint()
    assert static_sources_fingerprint() == before
    (small_static / "app.css").write_text("body { margin: 1px }")
    edited = static_sources_fingerprint()
    (small_static / "new.js").write_text("")
    assert len({before, edited, static_sources_fingerprint()}) == 3

