"""Events: every change a live page must see, in commit order, kept for a while so that a page
that reconnects receives exactly the events it missed (then pruned by a beat task)."""
from django.db import models

from .state import DELETE, UPSERT


class Event(models.Model):
    id = models.BigAutoField(primary_key=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    kind = models.CharField(
        max_length=32,
        help_text="job, node, gpu, solve_run, solver_config, predictor_version; resync: an event was lost.",
    )
    key = models.CharField(max_length=64, help_text="Which object of its kind (usually its primary key).")
    op = models.CharField(max_length=8, choices=[(UPSERT, "Upsert"), (DELETE, "Delete")], default=UPSERT)
    tenant = models.ForeignKey(
        "scheduler.Tenant", null=True, blank=True, on_delete=models.CASCADE, related_name="+",
        help_text="Empty: cluster-wide, seen by every signed-in user; else that tenant's members and staff.",
    )
    data = models.JSONField(null=True, blank=True, help_text="The object as the snapshot shows it (empty on delete).")

    class Meta:
        ordering = ["id"]

    def __str__(self):
        return f"event {self.pk}: {self.op} {self.kind} {self.key}"

    def as_message(self) -> dict:
        """What a WebSocket client receives."""
        return {"id": self.pk, "kind": self.kind, "key": self.key, "op": self.op, "data": self.data}


class EventWindow(models.Model):
    """The members of a bounded list (ended jobs, solve runs) as pages were last told, so that the
    writer holding the event lock can diff it against the list now and emit a delete for every
    object that left it and an upsert for every one that entered, however many changes
    committed concurrently since (windows.py)."""

    name = models.CharField(max_length=32, primary_key=True)
    keys = models.JSONField(default=list, help_text="Primary keys of the window's members.")

    def __str__(self):
        return f"window {self.name}: {len(self.keys)} objects"
