"""Metrics (Prometheus), traces (OpenTelemetry), and where requests meet them."""
