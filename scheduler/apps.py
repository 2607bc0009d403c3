from django.apps import AppConfig


class SchedulerConfig(AppConfig):
    name = "scheduler"
    verbose_name = "Scheduler"

    def ready(self):
        """The scheduler listens to what lower layers announce: telemetry's node and GPU losses
        (dispatch.receivers) and membership changes for the live layer (live.connect)."""
        from . import live
        from .dispatch import receivers
        from .profiling import receivers as profiling_receivers

        live.connect()
        receivers.connect()
        profiling_receivers.connect()
