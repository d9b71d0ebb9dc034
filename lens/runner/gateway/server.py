"""lens's metering model gateway: an OpenAI-compatible endpoint on loopback for memory systems.

During a run whose adapters declare gateway options (:mod:`lens.memory.gateway_access`), lens serves
``POST /v1/chat/completions``, ``POST /v1/embeddings`` and ``GET /v1/models`` on 127.0.0.1 at
an ephemeral port (aiohttp). Each unit gets a key of its own; a unit whose adapter declares
embeddings only has no chat model, and its chat calls are refused. A chat call goes through the
run's model stack (:class:`~lens.models.runtime.ModelRuntime`: the response cache, the endpoint
limits, retries, the usage meter and the run's cost cap) as role ``adapter`` with the unit's
repeat index, and its calls, tokens, latency and cost are added to that unit's memory cost. The
gateway only forwards what the memory system sends: it holds no dataset and no ground truth.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from pydantic import ValidationError

from lens.adapters.embedding import INSTALL_HINT
from lens.core.errors import ConfigError, UserError
from lens.core.jsonguard import JsonRefused, loads_guarded
from lens.core.logs import get_logger
from lens.core.redact import register_secret
from lens.data.config import AdapterConfig, ModelConfig, RunConfig
from lens.memory.adapter import ModelUsage
from lens.memory.gateway_access import (
    EmbeddingGatewayAccess,
    EmbeddingGatewayOptions,
    GatewayAccess,
)
from lens.models.base import ModelClient, ModelError
from lens.models.errors import CostLimitReached
from lens.models.runtime import ModelRuntime
from lens.models.usage import UsageTotals
from lens.runner.gateway.embeddings import NOT_INSTALLED, LocalEmbeddings, embeddings_installed
from lens.runner.gateway.plan import gateway_options
from lens.runner.gateway.wire import (
    ChatBody,
    EmbeddingsBody,
    WireError,
    chat_response,
    completion_request,
    embeddings_response,
    error_body,
)

log = get_logger("lens.runner.gateway")

# Memory systems send whole conversations and document batches in one request.
MAX_BODY_BYTES = 64 * 1024 * 1024


@dataclass
class _Chat:
    model: str
    client: ModelClient


@dataclass
class _Grant:
    arm: str
    unit: str
    repeat: int
    chat: _Chat | None  # None for a unit whose adapter only embeds


GRANT = web.RequestKey("grant", _Grant)


@dataclass
class _UnitUsage:
    chat: UsageTotals
    embedding_calls: int = 0
    embedding_tokens: int = 0
    embedding_latency_s: float = 0.0

    def as_model_usage(self) -> ModelUsage:
        c = self.chat
        return ModelUsage(
            calls=c.calls + self.embedding_calls,
            prompt_tokens=c.prompt_tokens + self.embedding_tokens,
            completion_tokens=c.completion_tokens, cache_hits=c.cache_hits,
            latency_s=c.latency_s + self.embedding_latency_s,
            # Local embeddings cost nothing; an unpriced chat call leaves the cost unknown.
            cost_usd=c.cost_usd, truncated=c.truncated,
        )


def add_usage(a: ModelUsage | None, b: ModelUsage | None) -> ModelUsage | None:
    """Two cumulative usages as one (either may be None; an unknown cost stays unknown)."""
    if a is None or b is None:
        return a if b is None else b
    return a + b


class ModelGateway:
    """The gateway of one run; ``start`` it inside the run's event loop, ``aclose`` after."""

    def __init__(self, runtime: ModelRuntime, *, embeddings: bool = True) -> None:
        self.runtime = runtime
        self._want_embeddings = embeddings
        self.embeddings: LocalEmbeddings | None = None
        self._grants: dict[str, _Grant] = {}
        self._usage: dict[str, _UnitUsage] = {}
        self._clients: dict[str, ModelClient] = {}
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    # -- the runner's side ---------------------------------------------------------------------
    def check(self, config: RunConfig, config_file: str) -> None:
        """Build the model client of every gateway adapter now, so a model lens cannot reach
        stops the run before any work, naming the adapter's field."""
        for i, cfg in enumerate(config.adapters):
            opts = gateway_options(cfg)
            if opts is None:
                continue
            if isinstance(opts, EmbeddingGatewayOptions) and not self.has_embeddings():
                raise ConfigError(f"{config_file}: field 'adapters.{i}': adapter "
                                  f"{cfg.display!r} embeds through lens's model gateway, which "
                                  f"has no embedding model: {INSTALL_HINT}")
            if config.executor.kind == "ray" and config.executor.address is not None:
                # The gateway listens on this machine's loopback only: an actor on another
                # node could not reach it.
                raise ConfigError(
                    f"{config_file}: field 'executor.address': adapter {cfg.display!r} calls "
                    "models through lens's model gateway, which listens on this machine only; "
                    "run it with the local executor or a Ray instance on this machine (no "
                    "address)")
            if isinstance(opts, EmbeddingGatewayOptions):
                continue
            try:
                self._client(opts.model_config_for_gateway())
            except (ConfigError, UserError) as exc:
                raise ConfigError(f"{config_file}: field 'adapters.{i}.options.model': "
                                  f"{exc.args[0]}") from None

    def _client(self, model: ModelConfig) -> ModelClient:
        key = json.dumps(model.model_dump(mode="json"), sort_keys=True)
        if key not in self._clients:
            self._clients[key] = self.runtime.client(model)
        return self._clients[key]

    def unit_config(self, cfg: AdapterConfig, unit_key: str, repeat: int) -> AdapterConfig:
        """``cfg`` with a fresh gateway access of this unit, for an adapter that asks for one."""
        opts = gateway_options(cfg)
        if opts is None:
            return cfg
        access: GatewayAccess | EmbeddingGatewayAccess
        if isinstance(opts, EmbeddingGatewayOptions):
            access = self.grant_embeddings(cfg.display, unit_key, repeat)
        else:
            access = self.grant(cfg.display, unit_key, repeat, opts.model_config_for_gateway())
        return cfg.model_copy(update={"options": {**cfg.options,
                                                  "gateway": access.model_dump()}})

    def has_embeddings(self) -> bool:
        """Whether the gateway serves embeddings (before ``start``: whether it will)."""
        return self._want_embeddings and embeddings_installed()

    def grant(self, arm: str, unit_key: str, repeat: int, model: ModelConfig) -> GatewayAccess:
        """A new key for ``unit_key``: its chat calls go to ``model``, and its calls count as the
        unit's."""
        key = self._new_key(_Grant(arm, unit_key, repeat, _Chat(model.model, self._client(model))))
        emb = self.embeddings
        return GatewayAccess(base_url=self.base_url, api_key=key, chat_model=model.model,
                             embedding_model=emb.name if emb else None,
                             embedding_dim=emb.dim if emb else None)

    def grant_embeddings(self, arm: str, unit_key: str, repeat: int) -> EmbeddingGatewayAccess:
        """A new key for ``unit_key`` to the embedding model alone; its calls count as the
        unit's."""
        emb = self.embeddings
        if emb is None or emb.dim is None:
            raise RuntimeError(NOT_INSTALLED)
        key = self._new_key(_Grant(arm, unit_key, repeat, None))
        return EmbeddingGatewayAccess(base_url=self.base_url, api_key=key,
                                      embedding_model=emb.name, embedding_dim=emb.dim)

    def _new_key(self, grant: _Grant) -> str:
        if self._runner is None:
            raise RuntimeError("the model gateway is not started")
        key = "lens-gw-" + secrets.token_urlsafe(24)
        register_secret(key)
        self._grants[key] = grant
        self._usage.setdefault(grant.unit, _UnitUsage(UsageTotals()))
        return key

    def revoke(self, unit_key: str) -> None:
        """End the unit's keys: a call its memory system still makes (a thread abandoned after
        a timeout) gets 401 instead of spending outside the unit's accounts."""
        for key in [k for k, g in self._grants.items() if g.unit == unit_key]:
            del self._grants[key]

    def unit_usage(self, unit_key: str) -> ModelUsage | None:
        """The unit's metered gateway usage so far, or None."""
        usage = self._usage.get(unit_key)
        return usage.as_model_usage() if usage is not None else None

    def embedding_totals(self) -> tuple[int, int]:
        """The embedding calls and their input tokens, over every unit so far."""
        return (sum(u.embedding_calls for u in self._usage.values()),
                sum(u.embedding_tokens for u in self._usage.values()))

    def with_unit_usage(self, unit_key: str, reported: ModelUsage | None) -> ModelUsage | None:
        """What the adapter reports of its own model calls plus what the gateway metered."""
        return add_usage(reported, self.unit_usage(unit_key))

    # -- lifecycle -----------------------------------------------------------------------------
    async def start(self) -> None:
        if self.has_embeddings():
            self.embeddings = LocalEmbeddings(cache=self.runtime.cache_config.enabled)
            await self.embeddings.load()
        app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=[self._auth])
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/embeddings", self._embed)
        app.router.add_get("/v1/models", self._models)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self._runner = runner
        host, port = runner.addresses[0][:2]
        self.base_url = f"http://{host}:{port}/v1"
        log.info("model gateway serving", url=self.base_url)

    async def aclose(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        if self.embeddings is not None:
            self.embeddings.close()
            self.embeddings = None

    # -- HTTP ----------------------------------------------------------------------------------
    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        header = request.headers.get("Authorization", "")
        token = header[7:].strip() if header[:7].lower() == "bearer " else ""
        grant = self._grants.get(token)
        if grant is None:
            return _error(401, "unknown or missing API key: use the key lens gave this unit "
                          "(GatewayAccess.api_key)", "invalid_request_error", "invalid_api_key")
        request[GRANT] = grant
        response: web.StreamResponse = await handler(request)
        return response

    async def _body(self, request: web.Request, shape: Any) -> Any:
        # Read as bytes and parsed through lens's one guard for untrusted JSON: a body nested
        # 100,000 deep is a 400, not a RecursionError and a 500.
        try:
            data = await request.read()
        except web.HTTPRequestEntityTooLarge:
            raise WireError(f"the request body is over the gateway's limit of "
                            f"{MAX_BODY_BYTES} bytes", 413) from None
        try:
            raw = loads_guarded(data, what="the request body", max_bytes=MAX_BODY_BYTES)
        except JsonRefused as exc:
            raise WireError(str(exc), exc.status) from None
        try:
            return shape.model_validate(raw)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(x) for x in e['loc']) or 'body'}: {e['msg']}"
                                 for e in exc.errors())
            raise WireError(problems) from None

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        grant = request[GRANT]
        started = time.perf_counter()
        try:
            body = await self._body(request, ChatBody)
            lens_request = completion_request(body, repeat=grant.repeat)
        except (WireError, ValueError) as exc:
            return _error(getattr(exc, "status", 400), str(exc), "invalid_request_error")
        chat = grant.chat
        if chat is None:
            return _error(403, "this unit's adapter declares embeddings only "
                          "(EmbeddingGatewayOptions), so the gateway has no chat model for it: "
                          "subclass GatewayOptions instead and name the model in its 'model' "
                          "option", "permission_denied", "chat_not_declared")
        usage = self._usage[grant.unit]
        try:
            completion = await chat.client.complete(lens_request)
        except CostLimitReached as exc:
            usage.chat.errors += 1
            return _error(402, str(exc), "insufficient_quota", "cost_limit_reached")
        except ModelError as exc:
            usage.chat.errors += 1
            log.warning("a memory system's model call failed", unit=grant.unit,
                        model=chat.model, error=str(exc))
            status = exc.status if exc.status in (400, 413, 422) else 502
            return _error(status, f"{chat.model}: {exc}", "model_error")
        usage.chat.add(completion.model_copy(
            update={"latency_s": time.perf_counter() - started}))
        if not completion.cached:
            usage.chat.cache_misses += 1
        return web.json_response(chat_response(completion, chat.model))

    async def _embed(self, request: web.Request) -> web.StreamResponse:
        grant = request[GRANT]
        if self.embeddings is None:
            return _error(501, NOT_INSTALLED, "not_implemented", "embeddings_unavailable")
        started = time.perf_counter()
        try:
            body = await self._body(request, EmbeddingsBody)
            texts = body.texts()
        except (WireError, ValueError) as exc:
            return _error(getattr(exc, "status", 400), str(exc), "invalid_request_error")
        if body.dimensions is not None and body.dimensions != self.embeddings.dim:
            return _error(400, f"dimensions: {self.embeddings.name} gives "
                          f"{self.embeddings.dim}, not {body.dimensions}", "invalid_request_error")
        vectors, tokens = await self.embeddings.embed(texts)
        usage = self._usage[grant.unit]
        usage.embedding_calls += 1
        usage.embedding_tokens += tokens
        usage.embedding_latency_s += time.perf_counter() - started
        return web.json_response(embeddings_response(vectors, self.embeddings.name, tokens,
                                                     body.encoding_format))

    async def _models(self, request: web.Request) -> web.StreamResponse:
        grant = request[GRANT]
        names = ([grant.chat.model] if grant.chat else []) + \
            ([self.embeddings.name] if self.embeddings else [])
        return web.json_response({"object": "list", "data": [
            {"id": n, "object": "model", "created": 0, "owned_by": "lens"} for n in names]})


def _error(status: int, message: str, kind: str, code: str | None = None) -> web.Response:
    return web.json_response(error_body(message, kind, code), status=status)
