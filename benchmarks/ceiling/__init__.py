"""The ceiling: bare Django answering JSON-RPC by hand, no MCP library."""
