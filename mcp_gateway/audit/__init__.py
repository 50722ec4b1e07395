"""The audit log: one row per ``tools/call`` and per exposure change.

``callrecord`` is what a call learns while it is served, ``models`` its rows,
``log`` the writes and reads, ``usage`` the usage export.
"""
