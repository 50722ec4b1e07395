"""django-mcpz serving the benchmark tools, bearer tokens from its database."""
