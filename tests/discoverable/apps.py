from __future__ import annotations

from django.apps import AppConfig


class DiscoverableConfig(AppConfig):
    name = "tests.discoverable"
    label = "discoverable"
