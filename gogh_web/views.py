"""The landing page: where an operator starts (admin, API docs, dashboard)."""
from django.shortcuts import render


def landing(request):
    return render(request, "landing.html")
