"""The HTTP boundary of the MCP endpoint: from a request to a dispatched message.

``serving`` picks the view per request (async on an event loop, sync
otherwise); ``views`` / ``aviews`` run ``admission`` (the boundary checks of
``boundary``, the tenant of ``tenancy``, the credential of ``bearer`` and the
principal, ``challenge`` for 401/403), hand the message to the dispatcher
and answer JSON, or an SSE stream (``sse``, ``streaming``) under ASGI, and
under WSGI for a 2025 call that asks its client (``asking``).
``asgi`` / ``wsgi`` hold the server-side guards.
"""
