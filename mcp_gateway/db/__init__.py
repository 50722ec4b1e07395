"""Database backends of the gateway (``ENGINE`` values)."""
