"""FilterSets of the catalog, for the API (and the dashboard's lists later)."""
import django_filters

from gogh_web.api.filters import AwareIsoDateTimeFilter, IntegerFilter, boolean_filter

from ..models import Measurement, MeasurementSource, Workload, WorkloadKind

NO_PARTNER = "none"


class WorkloadFilter(django_filters.FilterSet):
    kind = django_filters.ChoiceFilter(choices=WorkloadKind.choices)

    class Meta:
        model = Workload
        fields = ["name", "family", "kind"]


class MeasurementFilter(django_filters.FilterSet):
    workload = django_filters.CharFilter(field_name="workload__name", help_text="Workload name.")
    gpu_type = django_filters.CharFilter(field_name="gpu_type__name", help_text="GPU type name.")
    partner = django_filters.CharFilter(
        method="filter_partner", help_text=f'Partner workload name, or "{NO_PARTNER}" for runs alone.'
    )
    source = django_filters.ChoiceFilter(choices=MeasurementSource.choices)
    num_gpus = IntegerFilter()
    consolidated = boolean_filter(help_text="true: all GPUs on one server; false: spread.")
    observed_after = AwareIsoDateTimeFilter(
        field_name="observed_at", lookup_expr="gte", help_text="Observed at or after this time."
    )
    observed_before = AwareIsoDateTimeFilter(
        field_name="observed_at", lookup_expr="lt", help_text="Observed before this time."
    )

    class Meta:
        model = Measurement
        fields = ["workload", "gpu_type", "partner", "source", "num_gpus", "consolidated"]

    def filter_partner(self, queryset, name, value):
        if value == NO_PARTNER:
            return queryset.filter(partner__isnull=True)
        return queryset.filter(partner__name=value)
