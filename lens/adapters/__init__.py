"""Memory adapters shipped with lens, registered by name in ``lens.adapter.BUILTIN_ADAPTERS``."""
