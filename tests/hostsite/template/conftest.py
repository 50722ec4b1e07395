pytest_plugins = ["mcp_gateway.testing.fixtures"]
