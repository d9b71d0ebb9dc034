"""Foundation layer: what every other layer may use and that imports nothing of lens above it.

Errors shown to users, redaction of secrets, CPU and event-loop helpers, token counting,
logging, progress lines, the escaping of untrusted text and YAML hints. Public: ``plugins``
(entry-point discovery and ``add_entry_points``); every other module here is internal.
"""
