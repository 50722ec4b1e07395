from __future__ import annotations

from django.apps import AppConfig


class EnginesAppConfig(AppConfig):
    name = "engines_app"
    verbose_name = "Engines"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from engines_app.loading import autodiscover

        autodiscover()
