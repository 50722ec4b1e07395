"""django-mcp-server 0.5.7 (on mcp 1.30) serving the benchmark tools."""
