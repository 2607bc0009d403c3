"""GET /api/ answers what a script author looks for first: the version, every resource with
its URL, the schema and the docs; to anyone, since it says nothing the schema does not."""
import pytest

pytestmark = pytest.mark.django_db


def test_the_api_root_lists_its_resources_schema_and_docs(client_for):
    response = client_for().get("/api/", HTTP_HOST="127.0.0.1:8000")
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    index = response.json()
    assert index["version"] == "0.1.0"
    assert index["resources"]["jobs"] == "http://127.0.0.1:8000/api/jobs/"
    assert index["resources"]["nodes"] == "http://127.0.0.1:8000/api/nodes/"
    assert {"workloads", "gpu-types", "measurements", "gpus", "solve", "token-rotate"} <= set(index["resources"])
    assert index["schema"] == "http://127.0.0.1:8000/api/schema/"
    assert index["docs"] == "http://127.0.0.1:8000/api/docs/"
    assert "Authorization: Token" in index["authentication"]


def test_every_listed_resource_exists_and_asks_for_a_token(client_for):
    index = client_for().get("/api/").json()
    for name, url in index["resources"].items():
        path = url.removeprefix("http://testserver")
        response = client_for().get(path)
        assert response.status_code in (401, 405), (name, response.status_code)


def test_a_stale_token_still_reads_the_index(client_for, alice, settings):
    settings.GOGH_API_TOKEN_TTL_DAYS = 0.000001
    assert client_for(alice).get("/api/").status_code == 200
