"""A Celery task that a committed change needs, kept until the broker has it (and, for tasks
that say so, until the task itself confirms it started or did its work)."""
from django.db import models


class OutboxMessage(models.Model):
    id = models.BigAutoField(primary_key=True)
    task = models.CharField(
        max_length=200, help_text="The Celery task's name; its queue comes from CELERY_TASK_ROUTES."
    )
    args = models.JSONField(default=list, blank=True)
    kwargs = models.JSONField(default=dict, blank=True)
    countdown = models.FloatField(default=0, help_text="Seconds the broker holds the task before a worker may run it.")
    key = models.CharField(  # noqa: DJ001 -- NULL, not "": the unique constraint skips keyless messages
        max_length=200, null=True, blank=True,
        help_text="At most one message per key exists: asking again while it does adds nothing.",
    )
    until_acknowledged = models.BooleanField(
        default=False,
        help_text=(
            "Kept after sending until the task acknowledges it (sent again if it never does); else deleted once sent."
        ),
    )
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(
        null=True, blank=True, db_index=True, help_text="Empty: not (successfully) sent yet."
    )
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["key"], name="outbox_one_message_per_key")]

    def __str__(self):
        return f"outbox {self.pk}: {self.task} {self.key or ''}".rstrip()
