"""Memory adapters shipped with lens, registered by name in
``lens.memory.adapter.BUILTIN_ADAPTERS``."""
