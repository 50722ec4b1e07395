from __future__ import annotations

from django.apps import AppConfig
from django.core import checks


class McpGatewayConfig(AppConfig):
    name = "mcp_gateway"
    label = "mcp_gateway"
    verbose_name = "MCP gateway"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from engines_app.loading import load_dotted
        from mcp_gateway import bus, signals
        from mcp_gateway import checks as gateway_checks
        from mcp_gateway.bus import checks as bus_checks
        from mcp_gateway.conf import gateway_settings
        from mcp_gateway.engine_secrets import checks as secret_checks
        from mcp_gateway.engine_secrets import runtime
        from mcp_gateway.oauth import checks as oauth_checks

        load_dotted(gateway_settings().ENGINES)
        checks.register(gateway_checks.check_settings)
        checks.register(gateway_checks.check_auth_mode)
        checks.register(gateway_checks.check_public_base_url_origin)
        checks.register(gateway_checks.check_api_requirements, checks.Tags.urls)
        checks.register(oauth_checks.check_public_base_url)
        checks.register(gateway_checks.check_stale_exposures, checks.Tags.database)
        checks.register(bus_checks.check_bus)
        checks.register(secret_checks.check_secret_keys)
        checks.register(secret_checks.check_stored_keys, checks.Tags.database)
        checks.register(secret_checks.check_missing_secrets, checks.Tags.database)
        runtime.install_log_filter()
        signals.connect()
        bus.warn_if_shared()
