from __future__ import annotations

from django.urls import path
from oauth2_provider import views

urlpatterns = [
    path("o/token/", views.TokenView.as_view(), name="token"),
    path("o/introspect/", views.IntrospectTokenView.as_view(), name="introspect"),
]
