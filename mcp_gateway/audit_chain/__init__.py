"""The tamper-evident audit trail: each tenant's audit rows, hash-chained.

Rows are written as before, unsealed, on the request path. ``seal`` (run by
``manage.py mcp_audit seal``, off the request path) chains each tenant's
committed, unsealed rows after the chain's head in id order; ``verify``
recomputes the chains and reports the first broken link; ``stream`` writes
sealed rows as JSON lines for a SIEM. See docs/security.md, "The audit chain".
"""
