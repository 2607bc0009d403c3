"""Sign-in and sign-out for the dashboard (django.contrib.auth's views, our templates)."""
from django.contrib.auth import views as auth_views
from django.urls import path

from .accounts import SignInView

urlpatterns = [
    path("login/", SignInView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(next_page="login"), name="logout"),
]
