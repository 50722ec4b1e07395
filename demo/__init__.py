"""The reference project's demo: engines, their notes store, ``mcp_demo``.

Not part of the distributed app: only the reference project (``config``)
and the test suite install it.
"""
