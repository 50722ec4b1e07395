"""Route a JSON-RPC message by protocol era and method to its handler.

``core.handle`` (sync, WSGI) and ``core.ahandle`` (async, ASGI) are the one
dispatcher: era routing (``era``), ``tools/call`` admission (``calls``),
then the gateway's own handler for a plain ``tools/list`` / ``tools/call``
or the SDK's ``serve_one`` (``sdk``) for everything else, sharing each step.
"""
