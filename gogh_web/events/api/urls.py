from django.urls import path

from .views import SnapshotView

urlpatterns = [path("live/snapshot/", SnapshotView.as_view(), name="live-snapshot")]
