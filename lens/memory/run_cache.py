"""How an adapter that builds its own model client follows the run's ``cache`` section.

Most memory systems reach a model through the gateway (``gateway_access``), whose calls go
through the run's model stack. An adapter that calls lens's model stack itself
(``lens.create_client``: the consolidation baselines, mem0's extraction mode) has a client of
its own, and without this it would cache in lens's default cache folder whatever the run says.
Its options subclass :class:`RunCacheOptions`; for each unit the runner fills ``model_cache``
with the run's ``cache`` section, so the adapter's replies are cached where the run's are, and
not at all when the run's cache is off. Outside a run (``lens adapters check``, a test) it is
None and the adapter gets lens's default cache.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from lens.data.config import CacheConfig


class RunCacheOptions(BaseModel):
    """Subclass this for an adapter's ``Options`` to be given the run's cache section."""

    model_cache: CacheConfig | None = Field(
        default=None, description="set by lens for each unit: the run's cache section; a value "
        "in the config is replaced")

    def run_cache(self, *, enabled: bool = True) -> CacheConfig:
        """The cache for the adapter's own client (``create_client(config, cache=...)``)."""
        return cache_for(self.model_cache, enabled=enabled)


def cache_for(model_cache: CacheConfig | dict[str, object] | None, *,
              enabled: bool = True) -> CacheConfig:
    """The cache an adapter's own client uses: the run's, off when either the run or the
    adapter (``enabled``) turns it off."""
    run = CacheConfig.model_validate(model_cache) if model_cache is not None else CacheConfig()
    return run.model_copy(update={"enabled": run.enabled and enabled})


def wants_run_cache(cls: type) -> bool:
    """Whether an adapter class declares the run-cache option."""
    options = getattr(cls, "Options", None)
    return isinstance(options, type) and issubclass(options, RunCacheOptions)
