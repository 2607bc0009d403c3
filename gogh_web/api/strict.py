"""Strict request bodies: a field the endpoint does not know is an error, not silently dropped.

A typo such as `max_gpu` would otherwise submit a job with defaults the user never chose.
"""
from rest_framework import serializers

from .poison import shown_key


class StrictFieldsMixin:
    """Serializer mixin: unknown keys in the input -> 400 {"<key>": ["Unknown field."]}."""

    def to_internal_value(self, data):
        if isinstance(data, dict):
            known = {name for name, field in self.fields.items() if not field.read_only}
            unknown = sorted(set(data) - known)
            if unknown:  # named as paths name keys: a key may be as long as the body
                raise serializers.ValidationError({shown_key(key): ["Unknown field."] for key in unknown})
        return super().to_internal_value(data)
