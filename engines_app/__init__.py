"""Engines: plain Python objects that do one job each (no MCP here)."""
