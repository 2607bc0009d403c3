"""The OpenAPI schema is what client generators and the docs UI read: it must validate with no
warning, and document the endpoints other tools rely on."""
import yaml
from django.core.management import call_command


def test_schema_validates_without_warnings(tmp_path, db):
    out = tmp_path / "schema.yml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    paths = yaml.safe_load(out.read_text())["paths"]
    for path in ["/api/jobs/", "/api/jobs/{id}/cancel/", "/api/nodes/register/", "/api/measurements/",
                 "/api/gpu-types/", "/api/workloads/", "/api/gpus/"]:
        assert path in paths, path
