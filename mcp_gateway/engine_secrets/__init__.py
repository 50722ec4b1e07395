"""Per-tenant engine secrets: write-only, encrypted at rest, per-process cached.

Staff set them (admin, API, ``mcp_secrets``) through ``service``; engines read
``context.secrets`` (``runtime``); ``store`` keeps them per process and
``keys`` holds the Fernet keys of ``MCP_GATEWAY["SECRET_KEYS"]``.
"""
