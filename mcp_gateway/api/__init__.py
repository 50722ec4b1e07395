"""The management REST API: staff automate tenants, exposures and tokens."""
