"""Foundation layer: what every other layer may use and that imports nothing of lens above it.

Errors shown to users, redaction of secrets, CPU and event-loop helpers, token counting,
logging, progress lines, the escaping of untrusted text, YAML hints, entry-point discovery
(``plugins``) and lens's own distribution: its name, version and install hints
(``distribution``). Internal: a plugin declares entry points through ``lens.plugin_api``.
"""
