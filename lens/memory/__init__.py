"""Adapters-and-executor layer: the memory adapter contract (``adapter``), where a unit's
adapter runs (``executor``: in the driver, its own process or a Ray actor), how an adapter
reaches the model gateway (``gateway_access``), how one with a model client of its own follows the
run's cache (``run_cache``), the oracle arm's evidence and scenario hooks.

Public through ``lens``: ``MemoryAdapter``, ``SyncMemoryAdapter``, ``SearchResult``,
``Document``, ``CapabilityManifest``, ``GatewayOptions``, ``GatewayAccess``,
``EmbeddingGatewayOptions``, ``EmbeddingGatewayAccess``, ``RunCacheOptions``.
The rest is internal.
"""
