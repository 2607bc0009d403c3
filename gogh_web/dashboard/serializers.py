"""Request and response shapes of the Trade-off page's JSON endpoints (strict input: an
unknown field or a bad value is a 400 with a message per field)."""
from rest_framework import serializers

from gogh_web.api.fields import FiniteFloatField
from gogh_web.api.strict import StrictFieldsMixin
from scheduler.models.solver_config import MAX_ENERGY_WEIGHT, MAX_LOAD_WINDOW, MAX_WATTS_SETTING


class TradeoffSettingsSerializer(StrictFieldsMixin, serializers.Serializer):
    """Any of the four settings; the ones not given keep their stored value (the page sends
    only what the user changed, so a setting is never switched on by the form's default)."""

    base_energy_weight = FiniteFloatField(min_value=0, max_value=MAX_ENERGY_WEIGHT, required=False)
    adaptive_weight = serializers.BooleanField(required=False)
    load_window = serializers.IntegerField(min_value=1, max_value=MAX_LOAD_WINDOW, required=False)
    throughput_value_w = FiniteFloatField(
        min_value=0, max_value=MAX_WATTS_SETTING, required=False,
        help_text="W-equivalent of one unit of relative surplus.",
    )


class TradeoffApplySerializer(TradeoffSettingsSerializer):
    def validate(self, attrs):
        if not attrs:
            raise serializers.ValidationError("Nothing to apply: give at least one setting.")
        return attrs


class OperatingPointSerializer(serializers.Serializer):
    throughput = serializers.FloatField()
    power_w = serializers.FloatField()
    fairness = serializers.FloatField(help_text="Jain's index over tenants.")
    placed = serializers.IntegerField()


class SweepPointSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    energy_weight = serializers.FloatField()
    fairness_weight = serializers.FloatField()
    throughput = serializers.FloatField()
    power_w = serializers.FloatField()
    jain = serializers.FloatField()
    placed = serializers.IntegerField()
    status = serializers.CharField()
    seconds = serializers.FloatField()
    shared_by = serializers.IntegerField(help_text="Points of the sweep at this operating point, itself included.")


class SweepSerializer(serializers.Serializer):
    sweep = serializers.IntegerField()
    state_digest = serializers.CharField()
    status = serializers.ChoiceField(choices=["solving", "complete", "failed"],
                                     help_text="failed: a point failed, or the sweep ran past its time.")
    points_expected = serializers.IntegerField()
    surplus_value_w = serializers.FloatField()
    points = SweepPointSerializer(many=True)
    distinct_points = serializers.IntegerField(
        help_text="Distinct operating points among the points (1: every setting gives the same decision)."
    )
    failed_points = serializers.IntegerField()
    current = OperatingPointSerializer()
    tenants = serializers.IntegerField(help_text="Tenants with active jobs (below 2, Jain's index is 1 everywhere).")
    settings = TradeoffSettingsSerializer()
    can_apply = serializers.BooleanField()


class MoveSerializer(serializers.Serializer):
    job = serializers.IntegerField()
    kind = serializers.ChoiceField(
        choices=["place", "move", "share", "preempt", "figures"],
        help_text="share: same GPUs, other jobs sharing them; figures: same GPUs and partners, other figures.",
    )
    from_gpus = serializers.ListField(child=serializers.IntegerField())
    to_gpus = serializers.ListField(child=serializers.IntegerField())
    from_partners = serializers.ListField(child=serializers.IntegerField(), help_text="Jobs sharing its GPU now.")
    to_partners = serializers.ListField(child=serializers.IntegerField())
    from_type = serializers.CharField(help_text="GPU type now; empty when it waits or its GPUs are gone.")
    to_type = serializers.CharField()
    from_throughput = serializers.FloatField(help_text="Predicted steps/s where it runs now.")
    to_throughput = serializers.FloatField()
    from_power_w = serializers.FloatField()
    to_power_w = serializers.FloatField()


class ChangeSerializer(serializers.Serializer):
    throughput = serializers.FloatField()
    power_w = serializers.FloatField()


class PreviewSerializer(serializers.Serializer):
    current = OperatingPointSerializer()
    proposed = OperatingPointSerializer()
    energy_weight = serializers.FloatField(help_text="Effective weight, after the adaptive rule.")
    status = serializers.CharField()
    seconds = serializers.FloatField()
    moves = MoveSerializer(many=True)
    hidden_moves = serializers.IntegerField(help_text="Moves of other tenants' jobs, not listed.")
    hidden_change = ChangeSerializer(help_text="What the unlisted moves change in total.")
