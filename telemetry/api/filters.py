"""One FilterSet per inventory list, used by the API (and the dashboard's lists later)."""
import django_filters

from ..models import Gpu, GpuState, Node, NodeManager, NodeState


class NodeFilter(django_filters.FilterSet):
    state = django_filters.MultipleChoiceFilter(choices=NodeState.choices)
    cell = django_filters.CharFilter()
    managed_by = django_filters.MultipleChoiceFilter(choices=NodeManager.choices)
    gpu_type = django_filters.CharFilter(
        method="filter_gpu_type", help_text="Nodes with at least one GPU of this type."
    )

    class Meta:
        model = Node
        fields = ["state", "cell", "managed_by", "gpu_type"]

    def filter_gpu_type(self, queryset, name, value):
        # A subquery, not a join: a join would repeat nodes and inflate their GPU count.
        return queryset.filter(pk__in=Gpu.objects.filter(gpu_type__name=value).values("node"))


class GpuFilter(django_filters.FilterSet):
    node = django_filters.CharFilter(field_name="node__hostname", help_text="Host name of the node.")
    gpu_type = django_filters.CharFilter(field_name="gpu_type__name")
    state = django_filters.MultipleChoiceFilter(choices=GpuState.choices)
    held = django_filters.BooleanFilter(
        method="filter_held", help_text="GPUs a run GOGH did not submit holds (true) or not (false)."
    )

    class Meta:
        model = Gpu
        fields = ["node", "gpu_type", "state", "held"]

    def filter_held(self, queryset, name, value):
        held = queryset.exclude(external_holder="")
        return held if value else queryset.filter(external_holder="")
