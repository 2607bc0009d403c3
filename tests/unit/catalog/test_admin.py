"""The admin pages of the catalog render, with filters, search and autocomplete widgets."""
import re
from datetime import UTC, datetime

import pytest

from catalog.models import Measurement


@pytest.fixture
def admin_client(client, django_user_model, v100, resnet50, lm):
    user = django_user_model.objects.create_superuser("root", password="pw-root")
    client.force_login(user)
    Measurement.objects.create(
        workload=resnet50, gpu_type=v100, partner=lm, throughput=1.5, source="profiling",
        observed_at=datetime(2024, 5, 1, tzinfo=UTC),
    )
    return client


@pytest.mark.parametrize(
    "url",
    [
        "/admin/catalog/gputype/",
        "/admin/catalog/workload/?kind=training",
        "/admin/catalog/measurement/",
        "/admin/catalog/measurement/?source=profiling&num_gpus=1&consolidated__exact=1&q=ResNet",
        "/admin/catalog/measurement/?observed_at__year=2024",
        "/admin/catalog/measurement/add/",
    ],
)
def test_pages_render(admin_client, url):
    response = admin_client.get(url)
    assert response.status_code == 200


def test_measurement_list_shows_the_row_and_the_form_uses_autocomplete(admin_client):
    listing = admin_client.get("/admin/catalog/measurement/?q=ResNet").content.decode()
    assert "ResNet-50 (batch size 64)" in listing
    form = admin_client.get("/admin/catalog/measurement/add/").content.decode()
    assert set(re.findall(r'<select name="(\w+)"[^>]*class="admin-autocomplete"', form)) == {
        "workload", "gpu_type", "partner"
    }
    found = admin_client.get(
        "/admin/autocomplete/",
        {"app_label": "catalog", "model_name": "measurement", "field_name": "workload", "term": "LM"},
    ).json()
    assert [r["text"] for r in found["results"]] == ["LM (batch size 20)"]
