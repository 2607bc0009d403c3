"""One FilterSet per inventory list, used by the API (and the dashboard's lists later)."""
import django_filters

from ..models import Gpu, GpuState, Node, NodeState


class NodeFilter(django_filters.FilterSet):
    state = django_filters.MultipleChoiceFilter(choices=NodeState.choices)
    cell = django_filters.CharFilter()
    gpu_type = django_filters.CharFilter(
        method="filter_gpu_type", help_text="Nodes with at least one GPU of this type."
    )

    class Meta:
        model = Node
        fields = ["state", "cell", "gpu_type"]

    def filter_gpu_type(self, queryset, name, value):
        # A subquery, not a join: a join would repeat nodes and inflate their GPU count.
        return queryset.filter(pk__in=Gpu.objects.filter(gpu_type__name=value).values("node"))


class GpuFilter(django_filters.FilterSet):
    node = django_filters.CharFilter(field_name="node__hostname", help_text="Host name of the node.")
    gpu_type = django_filters.CharFilter(field_name="gpu_type__name")
    state = django_filters.MultipleChoiceFilter(choices=GpuState.choices)

    class Meta:
        model = Gpu
        fields = ["node", "gpu_type", "state"]
