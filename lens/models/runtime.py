"""ModelRuntime: what all model clients of one run share — the cache, the endpoint limiters, the
usage meter and the run's cost cap. The runner makes one per run and asks it for clients."""

from __future__ import annotations

from pathlib import Path

from lens.data.config import CacheConfig, ModelConfig, RunConfig
from lens.models.cache import ModelCache, default_cache_path
from lens.models.limits import LimiterRegistry, LimitSettings
from lens.models.pricing import pricing_for
from lens.models.providers import caches_replies, create_backend, has_wall_clock_timeout
from lens.models.retry import RetryPolicy
from lens.models.stack import StackClient
from lens.models.usage import UsageMeter, UsageSnapshot


class ModelRuntime:
    def __init__(
        self,
        *,
        cache: CacheConfig | None = None,
        max_cost_usd: float | None = None,
        run_id: str | None = None,
        retry: RetryPolicy | None = None,
        recover_after_successes: int = 8,
        recover_interval_s: float = 1.0,
        cut_cooldown_s: float = 1.0,
    ) -> None:
        self.cache_config = cache if cache is not None else CacheConfig()
        self.meter = UsageMeter(max_cost_usd)
        self.limiters = LimiterRegistry()
        self.run_id = run_id
        self.retry = retry
        self._adaptive = (recover_after_successes, recover_interval_s, cut_cooldown_s)
        self._cache: ModelCache | None = None
        self._clients: list[StackClient] = []

    @classmethod
    def for_run(cls, config: RunConfig, run_id: str | None = None) -> ModelRuntime:
        # max_cost_usd is a run-level field; read defensively so older configs still work.
        return cls(cache=config.cache, max_cost_usd=getattr(config, "max_cost_usd", None),
                   run_id=run_id)

    @property
    def cache_path(self) -> Path:
        return Path(self.cache_config.path) if self.cache_config.path else default_cache_path()

    @property
    def cache(self) -> ModelCache | None:
        if not self.cache_config.enabled:
            return None
        if self._cache is None:
            self._cache = ModelCache(self.cache_path)
        return self._cache

    def client(self, config: ModelConfig) -> StackClient:
        backend = create_backend(config)
        recover_n, recover_s, cooldown = self._adaptive
        settings = LimitSettings(
            max_concurrency=config.max_concurrency,
            requests_per_minute=config.requests_per_minute,
            tokens_per_minute=config.tokens_per_minute,
            recover_after_successes=recover_n, recover_interval_s=recover_s,
            cut_cooldown_s=cooldown,
        )
        client = StackClient(
            backend,
            meter=self.meter,
            limiter=self.limiters.get(config.provider, config.base_url, config.name, settings),
            retry=self.retry or RetryPolicy(max_retries=config.max_retries),
            # What the backend declares it needs (lens.models.providers), not its name.
            cache=self.cache if caches_replies(backend) else None,
            pricing=pricing_for(config),
            base_url=config.base_url,
            timeout_s=config.timeout_s if has_wall_clock_timeout(backend) else None,
            cache_options=dict(getattr(backend, "cache_identity", {}) or {}),
        )
        self._clients.append(client)
        return client

    def usage(self) -> UsageSnapshot:
        """Usage by role and model, with this run's cache hits and misses."""
        snap = self.meter.snapshot()
        cache = self._cache
        snap["cache"] = {
            "enabled": self.cache_config.enabled,
            "path": str(self.cache_path) if self.cache_config.enabled else None,
            "hits": cache.hits if cache else 0,
            "misses": cache.misses if cache else 0,
        }
        snap["rate_limited"] = {
            "/".join(k for k in key if k): lim.rate_limited for key, lim in self.limiters.items()
        }
        return snap

    async def aclose(self) -> None:
        clients, self._clients = self._clients, []
        for c in clients:
            await c.aclose()
        self.close_cache()

    def close_cache(self) -> None:
        if self._cache is not None:
            if self.run_id:
                self._cache.record_run(self.run_id)
            self._cache.close()
            self._cache = None
