"""The engine runtime: an engine's tool definition, its run, its deadline.

``adapter`` turns an engine into an MCP ``Tool`` and its return value into a
``CallToolResult``; ``deadlines`` holds the engine pool sync engines run in
and their deadlines; ``concurrency`` the per-engine slots; ``loop`` drives
async code from sync callers. Nothing here knows HTTP or the dispatcher.
"""
