"""Serve engines as MCP tools, per tenant, over stateless Streamable HTTP."""
