"""POST /api/solve/ (staff): run a scheduling round now, or a dry run that returns the
decision without applying it. The view validates and calls the service, nothing else."""
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAdminUser
from rest_framework.response import Response
from rest_framework.views import APIView

from gogh_web.api.strict import StrictFieldsMixin

from .. import services
from ..models import SolveTrigger
from ..optimizer.registry import SOLVER_CHOICES


class SolveRequestSerializer(StrictFieldsMixin, serializers.Serializer):
    dry_run = serializers.BooleanField(default=False, help_text="Return the decision without applying it.")
    solver = serializers.ChoiceField(
        choices=[name for name, _ in SOLVER_CHOICES], required=False, help_text="Override the configured solver once."
    )


class PlacementSerializer(serializers.Serializer):
    job = serializers.IntegerField()
    gpu_type = serializers.CharField()
    gpus = serializers.ListField(child=serializers.IntegerField())
    consolidated = serializers.BooleanField()
    partners = serializers.ListField(
        child=serializers.IntegerField(), help_text="Ids of the jobs sharing its GPU ([] alone)."
    )
    predicted_throughput = serializers.FloatField()
    predicted_power_w = serializers.FloatField()


class SolveResultSerializer(serializers.Serializer):
    solve_run = serializers.IntegerField()
    dry_run = serializers.BooleanField()
    solver = serializers.CharField()
    status = serializers.CharField()
    objective = serializers.FloatField()
    gap = serializers.FloatField(allow_null=True)
    duration_s = serializers.FloatField()
    power_w = serializers.FloatField()
    energy_weight = serializers.FloatField()
    variables = serializers.IntegerField()
    constraints = serializers.IntegerField()
    fallback_reason = serializers.CharField()
    placements = PlacementSerializer(many=True)
    pending = serializers.DictField(child=serializers.CharField(), help_text="Job id -> why it waits.")


def result_data(result: services.RoundResult) -> dict:
    run, allocation = result.solve_run, result.allocation
    return {
        "solve_run": run.pk,
        "dry_run": run.dry_run,
        "solver": run.solver,
        "status": run.status,
        "objective": run.objective,
        "gap": run.gap,
        "duration_s": run.duration_s,
        "power_w": run.power_w,
        "energy_weight": run.energy_weight,
        "variables": run.num_variables,
        "constraints": run.num_constraints,
        "fallback_reason": run.fallback_reason,
        "placements": [
            {
                "job": int(p.job_id),
                "gpu_type": p.gpu_type,
                "gpus": [int(g) for g in p.gpu_ids],
                "consolidated": p.consolidated,
                "partners": sorted(int(partner) for partner in p.partners),
                "predicted_throughput": p.predicted_throughput,
                "predicted_power_w": p.predicted_power_w,
            }
            for p in sorted(allocation.placements.values(), key=lambda p: int(p.job_id))
        ],
        "pending": dict(sorted(allocation.reasons.items(), key=lambda kv: int(kv[0]))),
    }


class SolveView(APIView):
    permission_classes = [IsAdminUser]

    @extend_schema(request=SolveRequestSerializer, responses={200: SolveResultSerializer})
    def post(self, request):
        body = SolveRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        result = services.scheduling_round_run(
            trigger=SolveTrigger.MANUAL, dry_run=body.validated_data["dry_run"],
            solver=body.validated_data.get("solver"),
        )
        return Response(SolveResultSerializer(result_data(result)).data)
