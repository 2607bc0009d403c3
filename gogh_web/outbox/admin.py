"""Outbox messages in the admin, read-only: what waits for the broker, and why it failed."""
from django.contrib import admin

from .models import OutboxMessage


@admin.register(OutboxMessage)
class OutboxMessageAdmin(admin.ModelAdmin):
    list_display = ["id", "task", "key", "created_at", "sent_at", "attempts", "last_error"]
    list_filter = ["task"]
    search_fields = ["key"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
