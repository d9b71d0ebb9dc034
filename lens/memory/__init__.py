"""Adapters-and-executor layer: the memory adapter contract (``adapter``), where a unit's
adapter runs (``executor``: in the driver, its own process or a Ray actor), how an adapter
reaches the model gateway (``gateway_access``), the oracle arm's evidence and scenario hooks.

Public through ``lens``: ``MemoryAdapter``, ``SyncMemoryAdapter``, ``SearchResult``,
``Document``, ``CapabilityManifest``, ``GatewayOptions``, ``GatewayAccess``. The rest is internal.
"""
