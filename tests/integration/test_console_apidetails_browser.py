"""/api/docs/ in Debian's Chromium at 1280x800 and 390x844: one section per resource, in the
order and with the descriptions of SPECTACULAR_SETTINGS["TAGS"], each holding its endpoints
(before, one "api" section held all 38). Screenshots: apidocs-<wide or narrow>.png under
GOGH_TEST_ARTIFACTS."""
import pytest
from django.conf import settings

from .browser import (
    SIZES,
    WAIT_MS,
    chromium as chromium,
    demo as demo,
    quiet_database as quiet_database,
    signed_in,
    stack as stack,
)
from .conftest import ARTIFACTS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres_tier]


@pytest.mark.parametrize("size", SIZES)
def test_the_api_docs_show_one_section_per_resource(stack, chromium, demo, size):
    base, _ = stack
    page = signed_in(chromium, base, "alice", size)
    page.goto(base + "/api/docs/")
    page.wait_for_selector(".opblock-tag", timeout=WAIT_MS)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"apidocs-{size}.png"), full_page=True)
    tags = settings.SPECTACULAR_SETTINGS["TAGS"]
    assert page.eval_on_selector_all(".opblock-tag", "els => els.map(e => e.dataset.tag)") == [t["name"] for t in tags]
    for tag in tags:
        assert tag["description"] in page.inner_text(f'.opblock-tag[data-tag="{tag["name"]}"]')
    jobs = page.locator('.opblock-tag-section:has(.opblock-tag[data-tag="jobs"]) .opblock-summary-path')
    assert jobs.all_inner_texts() == [
        "/api/jobs/", "/api/jobs/", "/api/jobs/{id}/", "/api/jobs/{id}/cancel/", "/api/jobs/{id}/interruptions/"
    ]
    assert page.errors == []
