"""The silence detector's memory between its runs (telemetry.lifecycle.Hearing), one row."""
from django.db import models


class SilenceWatch(models.Model):
    """Kept by services.nodes_mark_silent_down only. It lets the detector tell a control plane
    that was away (heard nobody, or did not run) from nodes that went silent, so an outage of
    the web or the database does not mark every node down."""

    checked_at = models.DateTimeField(null=True, blank=True, help_text="When the detector last ran.")
    deaf = models.BooleanField(
        default=False, help_text="At that run the control plane presumed itself away: it declared nobody silent."
    )
    hearing_since = models.DateTimeField(
        null=True, blank=True,
        help_text="When it heard again after being away; nodes are declared silent one full timeout after it.",
    )

    def __str__(self):
        return f"silence watch (checked {self.checked_at})"
