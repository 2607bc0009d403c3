from django.apps import AppConfig


class OutboxConfig(AppConfig):
    """The transactional outbox: Celery tasks a change needs, kept in the database until sent."""

    name = "gogh_web.outbox"
    label = "outbox"
    verbose_name = "Task outbox"
