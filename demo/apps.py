from __future__ import annotations

from django.apps import AppConfig
from django.core import checks


class DemoConfig(AppConfig):
    name = "demo"
    label = "demo"
    verbose_name = "Demo"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from demo.checks import check_secret_key

        checks.register(check_secret_key)
