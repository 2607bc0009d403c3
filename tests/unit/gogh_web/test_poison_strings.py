"""Poison strings on every API endpoint: a NUL character or a lone surrogate (which JSON's
\\ud800 escapes decode to) anywhere in a body, key or value, is a 400 naming where it is, and
nothing is written. Before, SQLite stored them and every later read of the row answered 500
(its JSON cannot be encoded), and PostgreSQL refused them with a 500.

Bodies are sent as ASCII JSON text with escapes, as a hostile client would: the test client's
own encoder cannot encode a lone surrogate. Runs on SQLite and, with DATABASE_URL, on PostgreSQL.
"""
import json
from urllib.parse import quote

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.test import Client

from scheduler.models import Allocation, Job
from telemetry.models import Gpu, Node

NUL, SURROGATE, LOW_SURROGATE = "\x00", "\ud800", "\udfff"
POISONS = {"nul": NUL, "surrogate": SURROGATE, "low-surrogate": LOW_SURROGATE}
STORED_APPS = ("catalog", "telemetry", "scheduler", "events", "dashboard")

@pytest.fixture
def world(db, alice, staff, agent, resnet50, v100):
    """A node of the agent with one GPU, a job of alice's placed on it."""
    node = Node.objects.create(hostname="node1", agent=agent)
    gpu = Gpu.objects.create(node=node, index=0, uuid="GPU-0", gpu_type=v100)
    job = Job.objects.create(owner=alice, tenant=alice.membership.tenant, workload=resnet50,
                             min_throughput=5, max_gpus=1, state="placed")
    Allocation.objects.create(job=job, gpu=gpu, start=job.submitted_at)
    return {"alice": alice, "staff": staff, "agent": agent, "node": node, "gpu": gpu, "job": job}

def stored_rows() -> dict:
    """Every row of the project's own tables, to show that a refused request wrote nothing."""
    return {
        model._meta.label: list(model.objects.order_by("pk").values())
        for app in STORED_APPS for model in apps.get_app_config(app).get_models()
    }

def post_raw(client, url, body, method="post", **extra):
    """POST (or PATCH) `body` as ASCII JSON: \\u0000 and \\ud800 travel as escapes."""
    return getattr(client, method)(url, data=json.dumps(body), content_type="application/json", **extra)

def job_body(**fields):
    return {"workload": "ResNet-50 (batch size 64)", "min_throughput": 10.0, "max_gpus": 1, **fields}

def gpu_type_body(**fields):
    return {"name": "a100", "memory_gb": 40, "tdp_w": 400, "idle_w": 50, "power_curve": [[0, 50], [1, 400]], **fields}

def workload_body(**fields):
    return {"name": "BERT (batch size 8)", "family": "BERT", "batch_size": 8, **fields}

def measurement_body(**fields):
    return {"workload": "ResNet-50 (batch size 64)", "gpu_type": "v100", "throughput": 100.0, **fields}

def registration_body(gpu=None, **fields):
    device = {"index": 0, "uuid": "GPU-new-0", "gpu_type": "v100", **(gpu or {})}
    return {"hostname": "node2", "labels": {"rack": "r1"}, "gpus": [device], **fields}

#: (who, method, url, body, where the poison is reported): the body's `P` is the poison.
CASES = {
    "job name": ("alice", "post", "/api/jobs/", lambda w, p: job_body(name=f"x{p}"), "name"),
    "job workload": ("alice", "post", "/api/jobs/", lambda w, p: job_body(workload=f"ResNet{p}"), "workload"),
    "job command": ("alice", "post", "/api/jobs/", lambda w, p: job_body(command=f"run{p}"), "command"),
    "job environment key": ("alice", "post", "/api/jobs/", lambda w, p: job_body(environment={f"K{p}": "v"}),
                            "environment.K"),
    "job environment value": ("alice", "post", "/api/jobs/", lambda w, p: job_body(environment={"K": f"v{p}"}),
                              "environment.K"),
    "job unknown field": ("alice", "post", "/api/jobs/", lambda w, p: job_body(**{f"x{p}": 1}), "x"),
    "job cancel reason": ("alice", "post", lambda w: f"/api/jobs/{w['job'].pk}/cancel/",
                          lambda w, p: {"reason": f"r{p}"}, "reason"),
    "gpu type name": ("staff", "post", "/api/gpu-types/", lambda w, p: gpu_type_body(name=f"a{p}"), "name"),
    "gpu type product names": ("staff", "post", "/api/gpu-types/",
                               lambda w, p: gpu_type_body(product_names=["A100", f"B{p}"]), "product_names[1]"),
    "gpu type provenance key": ("staff", "post", "/api/gpu-types/",
                                lambda w, p: gpu_type_body(provenance={f"tdp_w{p}": "spec"}), "provenance.tdp_w"),
    "gpu type update": ("staff", "patch", "/api/gpu-types/v100/", lambda w, p: {"description": f"d{p}"},
                        "description"),
    "workload name": ("staff", "post", "/api/workloads/", lambda w, p: workload_body(name=f"B{p}"), "name"),
    "workload provenance value": ("staff", "post", "/api/workloads/",
                                  lambda w, p: workload_body(provenance={"batch_size": f"paper{p}"}),
                                  "provenance.batch_size"),
    "measurement workload": ("staff", "post", "/api/measurements/",
                             lambda w, p: measurement_body(workload=f"ResNet{p}"), "workload"),
    "measurement in a batch": ("staff", "post", "/api/measurements/",
                               lambda w, p: [measurement_body(), measurement_body(reference=f"r{p}")],
                               "[1].reference"),
    "register hostname": ("agent", "post", "/api/nodes/register/",
                          lambda w, p: registration_body(hostname=f"node{p}"), "hostname"),
    "register label key": ("agent", "post", "/api/nodes/register/",
                           lambda w, p: registration_body(labels={f"rack{p}": "r1"}), "labels.rack"),
    "register label value": ("agent", "post", "/api/nodes/register/",
                             lambda w, p: registration_body(labels={"rack": f"r{p}"}), "labels.rack"),
    "register uuid": ("agent", "post", "/api/nodes/register/",
                      lambda w, p: registration_body(gpu={"uuid": f"GPU-{p}"}), "gpus[0].uuid"),
    "register product name": ("agent", "post", "/api/nodes/register/",
                              lambda w, p: registration_body(gpu={"gpu_type": "", "product_name": f"V100{p}"}),
                              "gpus[0].product_name"),
    "register agent version": ("agent", "post", "/api/nodes/register/",
                               lambda w, p: registration_body(agent_version=f"1{p}"), "agent_version"),
    "gpu failure uuid": ("agent", "post", lambda w: f"/api/nodes/{w['node'].pk}/gpu-failures/",
                         lambda w, p: {"gpus": [{"uuid": f"GPU-0{p}", "reason": "xid"}]}, "gpus[0].uuid"),
    "gpu failure reason": ("agent", "post", lambda w: f"/api/nodes/{w['node'].pk}/gpu-failures/",
                           lambda w, p: {"gpus": [{"uuid": "GPU-0", "reason": f"xid{p}"}]}, "gpus[0].reason"),
    "drain reason": ("staff", "post", lambda w: f"/api/nodes/{w['node'].pk}/drain/",
                     lambda w, p: {"reason": f"r{p}"}, "reason"),
    "sample gpu": ("agent", "post", "/api/telemetry/samples/",
                   lambda w, p: {"samples": [{"gpu": f"GPU-0{p}", "ts": "2024-01-01T00:00:00Z"}]}, "samples[0].gpu"),
    "sample timestamp": ("agent", "post", "/api/telemetry/samples/",
                         lambda w, p: {"samples": [{"gpu": "GPU-0", "ts": f"2024-01-01T00:00:00Z{p}"}]},
                         "samples[0].ts"),
    "job progress message": ("agent", "post", "/api/telemetry/job-progress/",
                             lambda w, p: {"job": w["job"].pk, "status": "running", "steps": 1, "message": f"m{p}"},
                             "message"),
    "job progress batch": ("agent", "post", "/api/telemetry/job-progress/batch/",
                           lambda w, p: {"reports": [{"job": w["job"].pk, "status": "running", "steps": 1,
                                                      "message": f"m{p}"}]}, "reports[0].message"),
    "solve solver": ("staff", "post", "/api/solve/", lambda w, p: {"dry_run": True, "solver": f"ilp{p}"}, "solver"),
    "trade-off apply": ("staff", "post", "/dashboard/api/tradeoff/apply/",
                        lambda w, p: {"load_window": 3, f"x{p}": 1}, "x"),
    "trade-off preview": ("staff", "post", "/dashboard/api/tradeoff/preview/",
                          lambda w, p: {"base_energy_weight": 0.5, f"x{p}": 1}, "x"),
}

def client_of(user) -> Client:
    """A signed-in session: the same for the REST API and the console's JSON endpoints."""
    client = Client()
    client.force_login(user)
    return client

@pytest.mark.parametrize("poison", POISONS.values(), ids=POISONS.keys())
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_poison_string_is_refused_with_400_naming_where_it_is_and_nothing_is_stored(world, case, poison):
    who, method, url, body, where = case
    url = url(world) if callable(url) else url
    client = client_of(world[who])
    before = stored_rows()
    response = post_raw(client, url, body(world, poison), method=method)
    assert response.status_code == 400, response.content
    fields = response.json()
    assert any(key.startswith(where) for key in fields), fields
    assert stored_rows() == before


@pytest.mark.parametrize(("poison", "described"), [
    (NUL, "a NUL character (U+0000), which text may not contain"),
    (SURROGATE, "a lone surrogate (U+D800), which is not a Unicode character"),
    (LOW_SURROGATE, "a lone surrogate (U+DFFF), which is not a Unicode character"),
], ids=POISONS.keys())
def test_a_poison_key_is_named_with_escapes_so_the_answer_is_valid_json_text(world, poison, described):
    """The path names the key with an escape: the key itself would make the answer unencodable."""
    response = post_raw(client_of(world["alice"]), "/api/jobs/", job_body(environment={f"A{poison}B": "v"}))
    assert response.status_code == 400
    assert response.json() == {f"environment.A\\u{ord(poison):04x}B": [f"The key contains {described}."]}
    assert not Job.objects.exclude(pk=world["job"].pk).exists()


#: url -> the parameter the answer names.
QUERIES = {
    "jobs by workload": ("/api/jobs/?workload=%00", "workload"),
    "jobs by owner": ("/api/jobs/?owner=a%00b", "owner"),
    "jobs by state": ("/api/jobs/?state=running&state=%00", "state"),
    "jobs ordering": ("/api/jobs/?ordering=%00", "ordering"),
    "jobs page": ("/api/jobs/?page=%00", "page"),
    "workloads by name": ("/api/workloads/?name=%00", "name"),
    "measurements by partner": ("/api/measurements/?partner=%00", "partner"),
    "measurements by gpu type": ("/api/measurements/?gpu_type=v%00", "gpu_type"),
    "nodes by gpu type": ("/api/nodes/?gpu_type=%00", "gpu_type"),
    "gpus by node": ("/api/gpus/?node=%00", "node"),
    "gpu type by name": ("/api/gpu-types/v%00/", "path"),
    "parameter name": ("/api/jobs/?work%00load=x", "work\\u0000load"),
    "trade-off sweep": ("/dashboard/api/tradeoff/1/?x=%00", "x"),
}


@pytest.mark.parametrize(("url", "named"), QUERIES.values(), ids=QUERIES.keys())
def test_a_nul_in_a_query_or_a_path_is_refused_with_400_naming_the_parameter(world, url, named):
    """Query strings and paths decode invalid UTF-8 to U+FFFD, so NUL is the only poison they
    can carry; in a path (a GPU type's name) it reached PostgreSQL: a 500."""
    response = client_of(world["staff"]).get(url)
    assert response.status_code == 400, response.content
    assert list(response.json()) == [named]


@pytest.mark.parametrize("url", ["/dashboard/jobs/?q=%00", "/dashboard/%00/", "/admin/catalog/gputype/?q=%00"])
def test_a_nul_in_a_console_address_is_a_plain_400(world, url):
    response = client_of(world["staff"]).get(url)
    assert response.status_code == 400
    assert response.content == b"A NUL character is not allowed in a path or query string."


@pytest.mark.parametrize("url", ["/accounts/login/", "/admin/login/"])
@pytest.mark.parametrize("username", ["ali\x00ce", "ali\ud800ce"], ids=["nul", "surrogate"])
def test_signing_in_with_a_poison_username_is_refused_without_a_500(world, url, username):
    """A form post decodes invalid UTF-8 (a surrogate's bytes) to U+FFFD; Django's CharField
    refuses NUL. The test client sends the surrogate's bytes as a browser could."""
    body = f"username={quote(username, errors='surrogatepass')}&password=pw-alice".encode()
    response = Client().post(url, data=body, content_type="application/x-www-form-urlencoded")
    assert response.status_code == 200  # the form again, with its errors
    assert "_auth_user_id" not in response.client.session


@pytest.mark.parametrize("key", ["a\x00b", "a\ud800b"], ids=["nul", "surrogate"])
def test_a_poison_idempotency_key_is_refused_and_nothing_is_stored(world, key):
    before = stored_rows()
    response = post_raw(client_of(world["alice"]), "/api/jobs/", job_body(), headers={"Idempotency-Key": key})
    assert response.status_code == 400
    assert "idempotency_key" in response.json()
    assert stored_rows() == before


@pytest.mark.parametrize(("field", "text"), [
    ("provenance", '{"tdp_w": "datasheet\\u0000"}'),
    ("provenance", '{"tdp_w\\ud800": "datasheet"}'),
    ("product_names", '["V100", "\\udfffX"]'),
], ids=["nul value", "surrogate key", "surrogate in a list"])
def test_the_admin_refuses_a_poison_string_in_a_json_field_and_stores_nothing(world, field, text):
    """The admin's JSON fields decode escapes as the API's parser does: before, SQLite stored the
    surrogate (the GPU type list then answered 500) and PostgreSQL answered 500."""
    form = {"name": "a100", "description": "", "memory_gb": "40", "tdp_w": "400", "idle_w": "50",
            "power_curve": "[[0, 50], [1, 400]]", "provenance": "{}", "product_names": "[]", field: text}
    client = Client()
    client.force_login(User.objects.create_superuser("root", password="pw-root"))
    before = stored_rows()
    response = client.post("/admin/catalog/gputype/add/", form)
    assert response.status_code == 200  # the form again, with the error
    assert "which text may not contain" in response.content.decode() or "not a Unicode character" in (
        response.content.decode())
    assert stored_rows() == before


HUGE = "K" * 500_000
#: (who, url, body, the field the answer names): keys and values larger than any column or use.
OVERSIZED = {
    "job unknown field": ("alice", "/api/jobs/", job_body(**{HUGE: 1}), f"{'K' * 64}…"),
    "job environment name": ("alice", "/api/jobs/", job_body(environment={HUGE: "v"}), "environment"),
    "gpu type provenance key": ("staff", "/api/gpu-types/", gpu_type_body(provenance={HUGE: "spec"}), "provenance"),
    "gpu type product name": ("staff", "/api/gpu-types/", gpu_type_body(product_names=["A" * 97]), "product_names"),
    "workload provenance source": ("staff", "/api/workloads/", workload_body(provenance={"family": "s" * 501}),
                                   "provenance"),
    "register label key": ("agent", "/api/nodes/register/", registration_body(labels={HUGE: "r1"}), "labels"),
}


@pytest.mark.parametrize(("who", "url", "body", "named"), OVERSIZED.values(), ids=OVERSIZED.keys())
def test_an_oversized_key_or_value_is_refused_without_echoing_it_and_nothing_is_stored(world, who, url, body, named):
    before = stored_rows()
    response = post_raw(client_of(world[who]), url, body)
    assert response.status_code == 400
    assert named in response.json()
    assert len(response.content) < 1000
    assert stored_rows() == before


def test_a_lone_surrogate_from_a_charset_that_decodes_to_one_is_refused_too(world):
    """UTF-7 carries U+D800 as +2AA, no escape needed (the test client encodes the text in the
    charset the content type names)."""
    body = json.dumps(job_body(name=f"x{SURROGATE}"), ensure_ascii=False)
    assert "+2AA" in body.encode("utf-7").decode("ascii")
    response = client_of(world["alice"]).post("/api/jobs/", data=body, content_type="application/json; charset=utf-7")
    assert response.status_code == 400
    assert response.json() == {"name": ["Contains a lone surrogate (U+D800), which is not a Unicode character."]}


def test_a_surrogate_pair_is_a_character_and_accepted(world):
    """An escaped pair decodes to one character outside the BMP: valid text, stored and shown."""
    response = post_raw(client_of(world["alice"]), "/api/jobs/", job_body(name="run \U0001F680"))
    assert '\\ud83d\\ude80' in json.dumps(job_body(name="run \U0001F680"))  # sent as escapes
    assert response.status_code == 201, response.content
    assert response.json()["name"] == "run \U0001F680"
