"""The OpenAPI schema's grouping: each operation is tagged with its resource, the first part of
its path under /api/ (jobs, nodes, gpu-types...), so /api/docs/ shows one section per resource
(SPECTACULAR_SETTINGS["TAGS"] describes them) where drf-spectacular put every endpoint under
"api". Operation ids stay as they were."""
import re

from drf_spectacular import openapi

_RESOURCE = re.compile(r"^/(?:dashboard/)?api/(?P<resource>[\w-]+)/")


class AutoSchema(openapi.AutoSchema):
    def get_tags(self) -> list[str]:
        match = _RESOURCE.match(self.path)
        return [match["resource"]] if match else super().get_tags()
