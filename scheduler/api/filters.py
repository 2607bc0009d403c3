"""One FilterSet for jobs, used by the API (and the dashboard's lists later)."""
import django_filters

from gogh_web.api.filters import AwareIsoDateTimeFilter, IntegerFilter

from ..lifecycle import JobState
from ..models import Job


class JobFilter(django_filters.FilterSet):
    state = django_filters.MultipleChoiceFilter(choices=[(s.value, s.value) for s in JobState])
    workload = django_filters.CharFilter(field_name="workload__name")
    family = django_filters.CharFilter(field_name="workload__family")
    tenant = django_filters.CharFilter(field_name="tenant__slug")
    owner = django_filters.CharFilter(field_name="owner__username")
    priority_min = IntegerFilter(field_name="priority", lookup_expr="gte")
    submitted_after = AwareIsoDateTimeFilter(field_name="submitted_at", lookup_expr="gte")
    submitted_before = AwareIsoDateTimeFilter(field_name="submitted_at", lookup_expr="lt")

    class Meta:
        model = Job
        fields = ["state", "workload", "family", "tenant", "owner", "priority_min"]
