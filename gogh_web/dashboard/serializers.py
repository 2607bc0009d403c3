"""Request and response shapes of the Trade-off page's JSON endpoints (strict input: an
unknown field or a bad value is a 400 with a message per field)."""
import math

from rest_framework import serializers

from gogh_web.api.strict import StrictFieldsMixin


def _finite(value):
    if not math.isfinite(value):
        raise serializers.ValidationError("Must be a finite number.")
    return value


class TradeoffSettingsSerializer(StrictFieldsMixin, serializers.Serializer):
    base_energy_weight = serializers.FloatField(min_value=0, max_value=1000, validators=[_finite])
    adaptive_weight = serializers.BooleanField()
    load_window = serializers.IntegerField(min_value=1, max_value=10000)
    throughput_value_w = serializers.FloatField(
        min_value=0, max_value=100000, validators=[_finite], help_text="W-equivalent of one unit of relative surplus."
    )


class OperatingPointSerializer(serializers.Serializer):
    throughput = serializers.FloatField()
    power_w = serializers.FloatField()
    fairness = serializers.FloatField(help_text="Jain's index over tenants.")
    placed = serializers.IntegerField()


class SweepPointSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    energy_weight = serializers.FloatField()
    fairness_on = serializers.BooleanField()
    throughput = serializers.FloatField()
    power_w = serializers.FloatField()
    jain = serializers.FloatField()
    placed = serializers.IntegerField()
    status = serializers.CharField()
    seconds = serializers.FloatField()


class SweepSerializer(serializers.Serializer):
    sweep = serializers.IntegerField()
    state_digest = serializers.CharField()
    complete = serializers.BooleanField()
    points_expected = serializers.IntegerField()
    surplus_value_w = serializers.FloatField()
    points = SweepPointSerializer(many=True)
    current = OperatingPointSerializer()
    settings = TradeoffSettingsSerializer()
    can_apply = serializers.BooleanField()


class MoveSerializer(serializers.Serializer):
    job = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=["place", "move", "preempt"])
    from_gpus = serializers.ListField(child=serializers.IntegerField())
    to_gpus = serializers.ListField(child=serializers.IntegerField())


class PreviewSerializer(serializers.Serializer):
    current = OperatingPointSerializer()
    proposed = OperatingPointSerializer()
    energy_weight = serializers.FloatField(help_text="Effective weight, after the adaptive rule.")
    status = serializers.CharField()
    seconds = serializers.FloatField()
    moves = MoveSerializer(many=True)
    hidden_moves = serializers.IntegerField(help_text="Moves of other tenants' jobs, not listed.")
