from django.apps import AppConfig


class EventsConfig(AppConfig):
    """The live-update event stream: model, emission, snapshot, WebSocket consumer."""

    name = "gogh_web.events"
    label = "events"
    verbose_name = "Live events"

    def ready(self):
        from . import signals

        signals.connect()
