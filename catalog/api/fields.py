"""The catalog's own serializer field: workloads and GPU types by name."""
from rest_framework import serializers


class ByName(serializers.SlugRelatedField):
    """A workload or GPU type given by its name.

    Names are looked up once per request: a batch of 1000 measurements names a handful of
    workloads and GPU types, not 3000 different ones.
    """

    def __init__(self, what: str, queryset, **kwargs):
        kwargs.setdefault(
            "error_messages",
            {"does_not_exist": f"Unknown {what} {{value!r}}.", "invalid": f"Give the {what}'s name as a string."},
        )
        super().__init__(slug_field="name", queryset=queryset, **kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        cache = vars(self.root).setdefault("_objects_by_name", {})
        key = (self.queryset.model, data)
        if key not in cache:
            cache[key] = super().to_internal_value(data)
        return cache[key]
