"""The agents' job endpoints, at the paths agents have always used (under /api/)."""
from django.urls import path, re_path

from .views import JobProgressBatchView, JobProgressView, NodeAssignmentsView

urlpatterns = [
    re_path(r"^nodes/(?P<pk>\d+)/assignments/$", NodeAssignmentsView.as_view(), name="node-assignments"),
    path("telemetry/job-progress/", JobProgressView.as_view(), name="telemetry-job-progress"),
    path("telemetry/job-progress/batch/", JobProgressBatchView.as_view(), name="telemetry-job-progress-batch"),
]
