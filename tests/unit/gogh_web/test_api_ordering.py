"""`?ordering=` on every list that orders: an unknown term is a 400 naming the allowed orderings
(DRF's OrderingFilter ignored it and listed in the default order), known ones work as before."""
import pytest
from drf_spectacular.generators import SchemaGenerator

# Every list endpoint with an `ordering` parameter, with its ordering fields. (The schema also
# shows the nodes' filters on POST gpu-failures, whose answer is a list; none is applied there.)
ORDERED_LISTS = {
    "/api/gpu-types/": ["name", "memory_gb", "tdp_w", "idle_w"],
    "/api/workloads/": ["name", "family", "batch_size", "id"],
    "/api/measurements/": ["observed_at", "throughput", "num_gpus", "id"],
    "/api/nodes/": ["hostname", "state", "cell", "last_heartbeat", "registered_at"],
    "/api/gpus/": ["node__hostname", "index", "state"],
    "/api/jobs/": ["submitted_at", "priority", "state", "id"],
    "/api/profiling-campaigns/": ["created_at", "id"],
}


def test_the_table_lists_every_endpoint_that_orders():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    ordered = {
        path
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if method == "get" and any(parameter["name"] == "ordering" for parameter in operation.get("parameters", []))
    }
    assert ordered == set(ORDERED_LISTS)


@pytest.mark.parametrize("path", ORDERED_LISTS)
@pytest.mark.parametrize("ordering", ["bogus", "-bogus", "{first},bogus", "+{first}", "?"])
def test_an_unknown_ordering_is_a_400_naming_the_allowed_ones(client_for, staff, path, ordering):
    allowed = ORDERED_LISTS[path]
    response = client_for(staff).get(path, {"ordering": ordering.format(first=allowed[0])})
    assert response.status_code == 400, response.content
    [message] = response.json()["ordering"]
    assert message.startswith("Cannot order by ")
    assert f"Order by {', '.join(allowed)}; '-' first for descending" in message


@pytest.mark.parametrize("path", ORDERED_LISTS)
@pytest.mark.parametrize("ordering", ["", "{first}", "-{first}", "{first},-{last}", " {first} ,"])
def test_known_orderings_still_work(client_for, staff, path, ordering):
    allowed = ORDERED_LISTS[path]
    response = client_for(staff).get(path, {"ordering": ordering.format(first=allowed[0], last=allowed[-1])})
    assert response.status_code == 200, response.content


def test_the_message_names_the_bad_terms_and_cuts_long_ones(client_for, alice):
    response = client_for(alice).get("/api/jobs/", {"ordering": f"priority,owner,{'x' * 300}"})
    [message] = response.json()["ordering"]
    assert message.startswith(f"Cannot order by 'owner', '{'x' * 64}...'. Order by submitted_at, priority")


def test_the_browsable_api_answers_the_400_too(client_for, alice):
    response = client_for(alice).get("/api/jobs/?ordering=bogus", HTTP_ACCEPT="text/html")
    assert response.status_code == 400
    assert b"Cannot order by" in response.content


def test_the_schema_lists_the_allowed_orderings():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    [parameter] = [p for p in schema["paths"]["/api/jobs/"]["get"]["parameters"] if p["name"] == "ordering"]
    assert parameter["description"].startswith("Order by submitted_at, priority, state, id;")
