"""Events in the admin, read-only: to see what pages were told, and when."""
from django.contrib import admin

from .models import Event


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    list_display = ["id", "created_at", "kind", "key", "op", "tenant"]
    list_filter = ["kind", "op"]
    search_fields = ["key"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
