"""The MemoryAdapter contract, its data types, and the adapter registry.

A memory-system author writes one class. Async methods are the contract; a class that prefers
plain functions subclasses :class:`SyncMemoryAdapter` and lens runs its methods in worker threads.
Adapters only ever see episodes without scenario metadata and the agent's queries: never ground
truth, question types or checkpoints' questions.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import os
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lens.core import plugins
from lens.core.errors import AdapterNotFound, ConfigError, Problem, did_you_mean
from lens.data.dataset import Episode
from lens.memory.listing import MemoryListing

if TYPE_CHECKING:
    from lens.models.base import Completion

ENTRY_POINT_GROUP = plugins.ADAPTERS


class SearchResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ref_id: str = Field(min_length=1)
    text: str
    score: float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class Document(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ref_id: str = Field(min_length=1)
    text: str
    metadata: dict[str, Any] = Field(default_factory=dict)


class ExtraTool(BaseModel):
    """An adapter-specific tool the agent may call through ``call_extended_tool``."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
    description: str
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )


class CapabilityManifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    search_modes: list[str] = Field(default_factory=lambda: ["keyword"])
    filter_fields: list[str] = Field(default_factory=list)
    max_results: int = Field(default=10, ge=1)
    extra_tools: list[ExtraTool] = Field(default_factory=list)
    # Ref ids the adapter makes up itself (summaries, chunks) start with one of these; grounding
    # accepts them as real even though no episode carries that id.
    synthetic_ref_prefixes: list[str] = Field(default_factory=list)
    # The adapter supplies a standing-context block (``standing_context``) that the agent
    # reads before any tool call; lens only asks adapters that declare it.
    standing_context: bool = False
    # The adapter lists what it stores (``list_memory``): lens fixes the state that answered by
    # it and scores what the memory wrote; without it those figures are unknown.
    memory_listing: bool = False
    description: str = ""


class ModelUsage(BaseModel):
    """What an adapter's own model calls have used so far (cumulative over its lifetime)."""

    model_config = ConfigDict(extra="ignore")

    calls: int = Field(default=0, ge=0)
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    cache_hits: int = Field(default=0, ge=0)
    latency_s: float = Field(default=0.0, ge=0)
    # None: at least one call had no known price, so the cost is unknown (never "free").
    cost_usd: float | None = Field(default=None, ge=0)
    # Replies the model stopped at max_tokens (finish reason "length").
    truncated: int = Field(default=0, ge=0)

    def __add__(self, other: ModelUsage) -> ModelUsage:
        cost = (None if self.cost_usd is None or other.cost_usd is None
                else self.cost_usd + other.cost_usd)
        return ModelUsage(calls=self.calls + other.calls,
                          prompt_tokens=self.prompt_tokens + other.prompt_tokens,
                          completion_tokens=self.completion_tokens + other.completion_tokens,
                          cache_hits=self.cache_hits + other.cache_hits,
                          latency_s=self.latency_s + other.latency_s, cost_usd=cost,
                          truncated=self.truncated + other.truncated)

    @classmethod
    def of_call(cls, completion: Completion) -> ModelUsage:
        """One model call's usage, from a lens ``Completion``."""
        return cls(calls=1, prompt_tokens=completion.usage.prompt_tokens,
                   completion_tokens=completion.usage.completion_tokens,
                   cache_hits=int(completion.cached), latency_s=completion.latency_s,
                   cost_usd=completion.cost_usd,
                   truncated=int(completion.finish_reason == "length"))


class MemoryAdapter(ABC):
    """The contract between lens and a memory system.

    Subclasses may declare ``Options`` (a pydantic model) to validate their config options; the
    validated options are passed to ``__init__`` as keyword arguments.
    """

    Options: ClassVar[type[BaseModel] | None] = None

    @abstractmethod
    async def reset(self, scope_id: str) -> None:
        """Forget everything; the next episodes belong to ``scope_id``."""

    @abstractmethod
    async def ingest(self, episode: Episode) -> None:
        """Store one episode. Episodes arrive in timestamp order."""

    async def prepare(self, scope_id: str, checkpoint: int) -> None:  # noqa: B027
        """Called before the questions of a checkpoint; a place to build indexes or summaries."""

    @abstractmethod
    async def search(
        self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None
    ) -> list[SearchResult]: ...

    @abstractmethod
    async def retrieve(self, ref_id: str) -> Document | None: ...

    @abstractmethod
    async def get_capabilities(self) -> CapabilityManifest: ...

    async def call_extended_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        raise NotImplementedError(f"this adapter has no tool named {name!r}")

    async def standing_context(self, scope_id: str, checkpoint: int) -> str | None:
        """A block of text the agent reads before any tool call at this checkpoint (a core
        memory, a running summary), or None. Asked after ``prepare`` when the capabilities
        declare ``standing_context``; it counts against the agent's payload budget."""
        return None

    async def model_usage(self) -> dict[str, Any] | None:
        """The adapter's own model usage so far (``ModelUsage`` fields: calls, prompt_tokens,
        completion_tokens, cost_usd), or None when it calls no model."""
        return None

    async def list_memory(self, scope_id: str, checkpoint: int) -> MemoryListing | None:
        """Everything stored for ``scope_id`` now (``lens.memory.listing``), or None when the
        system cannot list. Asked when the capabilities declare ``memory_listing``, after
        ``prepare`` and again after the checkpoint's last question; it must not change the
        state it lists."""
        return None

    async def aclose(self) -> None:  # noqa: B027
        """Release files, connections and threads."""


class SyncMemoryAdapter(ABC):
    """The same contract with plain methods; lens runs them in worker threads."""

    Options: ClassVar[type[BaseModel] | None] = None

    @abstractmethod
    def reset(self, scope_id: str) -> None: ...

    @abstractmethod
    def ingest(self, episode: Episode) -> None: ...

    def prepare(self, scope_id: str, checkpoint: int) -> None:  # noqa: B027
        pass

    @abstractmethod
    def search(
        self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None
    ) -> list[SearchResult]: ...

    @abstractmethod
    def retrieve(self, ref_id: str) -> Document | None: ...

    @abstractmethod
    def get_capabilities(self) -> CapabilityManifest: ...

    def call_extended_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        raise NotImplementedError(f"this adapter has no tool named {name!r}")

    def standing_context(self, scope_id: str, checkpoint: int) -> str | None:
        return None

    def model_usage(self) -> dict[str, Any] | None:
        return None

    def list_memory(self, scope_id: str, checkpoint: int) -> MemoryListing | None:
        return None

    def close(self) -> None:  # noqa: B027
        pass


class ThreadedAdapter(MemoryAdapter):
    """Runs a :class:`SyncMemoryAdapter` in worker threads so it never blocks the event loop.

    Calls are serialised with a lock: a synchronous adapter is not assumed to be thread-safe.
    A call whose caller gives up (a timeout) is abandoned, not waited for: its thread runs on,
    but the run goes on without it. Only a process of its own (``isolation: process``) can
    stop such a call for good.
    """

    def __init__(self, inner: SyncMemoryAdapter) -> None:
        self.inner = inner
        self._lock = anyio.Lock()

    async def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        async with self._lock:
            return await anyio.to_thread.run_sync(functools.partial(fn, *args),
                                                  abandon_on_cancel=True)

    async def reset(self, scope_id: str) -> None:
        await self._call(self.inner.reset, scope_id)

    async def ingest(self, episode: Episode) -> None:
        await self._call(self.inner.ingest, episode)

    async def prepare(self, scope_id: str, checkpoint: int) -> None:
        await self._call(self.inner.prepare, scope_id, checkpoint)

    async def search(
        self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None
    ) -> list[SearchResult]:
        results: list[SearchResult] = await self._call(self.inner.search, query, filters, limit)
        return results

    async def retrieve(self, ref_id: str) -> Document | None:
        doc: Document | None = await self._call(self.inner.retrieve, ref_id)
        return doc

    async def get_capabilities(self) -> CapabilityManifest:
        caps: CapabilityManifest = await self._call(self.inner.get_capabilities)
        return caps

    async def call_extended_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        return await self._call(self.inner.call_extended_tool, name, arguments)

    async def standing_context(self, scope_id: str, checkpoint: int) -> str | None:
        text: str | None = await self._call(self.inner.standing_context, scope_id, checkpoint)
        return text

    async def model_usage(self) -> dict[str, Any] | None:
        usage: dict[str, Any] | None = await self._call(self.inner.model_usage)
        return usage

    async def list_memory(self, scope_id: str, checkpoint: int) -> MemoryListing | None:
        listing: MemoryListing | None = await self._call(self.inner.list_memory, scope_id,
                                                         checkpoint)
        return listing

    async def aclose(self) -> None:
        await self._call(self.inner.close)


AdapterClass = type[MemoryAdapter] | type[SyncMemoryAdapter]

# Built-ins are imported lazily so optional dependencies of one adapter never break another.
BUILTIN_ADAPTERS: dict[str, str] = {
    "null": "lens.adapters.null:NullAdapter",
    "sqlite_fts": "lens.adapters.sqlite_fts:SqliteFtsAdapter",
    "sqlite_fts_chunked": "lens.adapters.sqlite_fts:SqliteFtsChunkedAdapter",
    "bm25s": "lens.adapters.bm25s_adapter:Bm25sAdapter",
    "bm25s_chunked": "lens.adapters.bm25s_adapter:Bm25sChunkedAdapter",
    "vector": "lens.adapters.vector:VectorAdapter",
    "vector_chunked": "lens.adapters.vector:VectorChunkedAdapter",
    "hybrid": "lens.adapters.hybrid:HybridAdapter",
    "hybrid_chunked": "lens.adapters.hybrid:HybridChunkedAdapter",
    "full_context": "lens.adapters.in_context:FullContextAdapter",
    "recency": "lens.adapters.in_context:RecencyAdapter",
    # A reference arm: lens serves each question's required evidence (lens/memory/oracle.py).
    "oracle": "lens.adapters.oracle:OracleStandIn",
    "mem0": "lens.adapters.mem0:Mem0Adapter",
    "langmem": "lens.adapters.langmem_adapter:LangMemAdapter",
    "graphiti": "lens.adapters.graphiti_adapter:GraphitiAdapter",
    "letta": "lens.adapters.letta_adapter:LettaAdapter",
    "cognee": "lens.adapters.cognee_adapter:CogneeAdapter",
    "postgres": "lens.adapters.postgres:PostgresAdapter",
    "summary": "lens.adapters.consolidators:SummaryAdapter",
    "core": "lens.adapters.consolidators:CoreAdapter",
    "faceted": "lens.adapters.consolidators:FacetedAdapter",
    # LongMemEval's flat BM25 retriever, set up as its official retrieval code sets it up.
    "longmemeval_bm25": "lens.adapters.longmemeval_bm25:LongMemEvalBm25Adapter",
}

# Built-ins that keep process-wide state (Cognee's configuration): under ``isolation: auto``
# each instance gets a process of its own, as a third-party adapter does.
OWN_PROCESS: frozenset[str] = frozenset({"cognee"})

_registered: dict[str, AdapterClass] = {}


def register_adapter(name: str) -> Callable[[AdapterClass], AdapterClass]:
    """Register an adapter class under ``name`` (for adapters defined in tests or notebooks)."""

    def deco(cls: AdapterClass) -> AdapterClass:
        _registered[name] = cls
        return cls

    return deco


def registered_adapter(name: str) -> bool:
    """Whether ``name`` was registered in this process with :func:`register_adapter`."""
    return name in _registered


def _search_current_folder() -> None:
    """Let a ``module:Class`` adapter live in the folder lens runs from, whether lens started as
    ``python -m lens`` (which puts that folder first on the path) or as the ``lens`` script
    (which does not). The folder goes last, so a folder named like a package lens imports (a
    clone called ``lens``) can never shadow it; isolated workers inherit this path."""
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.append(here)


def _load_target(target: str) -> AdapterClass:
    module_name, _, attr = target.partition(":")
    if not attr or not module_name:
        raise AdapterNotFound(f"{target!r} is not of the form 'package.module:ClassName'")
    _search_current_folder()
    try:
        module = importlib.import_module(module_name)
    except (ImportError, ValueError, TypeError) as exc:  # a relative or empty name: not importable
        raise AdapterNotFound(
            f"cannot import {module_name!r} for adapter {target!r}: {exc} (a 'module:Class' "
            "adapter is imported from the installed packages, PYTHONPATH or the current folder)"
        ) from None
    try:
        cls = getattr(module, attr)
    except AttributeError:
        raise AdapterNotFound(f"module {module_name!r} has no class {attr!r}") from None
    if not (inspect.isclass(cls) and issubclass(cls, MemoryAdapter | SyncMemoryAdapter)):
        raise AdapterNotFound(
            f"{target!r} is not a MemoryAdapter or SyncMemoryAdapter subclass"
        )
    return cls


def _entry_point_targets() -> dict[str, str]:
    return plugins.targets(ENTRY_POINT_GROUP)


def adapter_names() -> list[str]:
    """Every adapter name lens can create: built-ins, entry points and registered classes."""
    return sorted(set(BUILTIN_ADAPTERS) | set(_entry_point_targets()) | set(_registered))


def resolve_adapter(name: str) -> AdapterClass:
    """The class for ``name``: a registered name, an entry point, or ``module:Class``."""
    if name in _registered:
        return _registered[name]
    if name in BUILTIN_ADAPTERS:
        return _load_target(BUILTIN_ADAPTERS[name])
    eps = _entry_point_targets()
    if name in eps:
        return _load_target(eps[name])
    if ":" in name:
        return _load_target(name)
    raise AdapterNotFound(
        f"unknown adapter {name!r}; {did_you_mean(name, adapter_names(), 'adapter')} "
        "(or give 'package.module:ClassName')"
    )


def option_problems(exc: ValidationError, model: type[BaseModel]) -> list[tuple[str, str]]:
    """Every problem of an adapter's options as (dotted location, message): an unknown option
    with the close spelling and the valid ones."""
    out = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"])
        if err["type"] == "extra_forbidden":
            msg = f"unknown option; {did_you_mean(err['loc'][-1], model.model_fields)}"
        else:
            msg = str(err["msg"]).removeprefix("Value error, ")
        out.append((loc, msg))
    return out


def options_error(problems: list[tuple[str, str]], file: str | None) -> ConfigError:
    """One error naming every problem (``problems`` as (field, message))."""
    where = f"{file}: " if file else ""
    if len(problems) == 1:
        return ConfigError(f"{where}field '{problems[0][0]}': {problems[0][1]}")
    return ConfigError(f"{where}invalid config: {len(problems)} problems",
                       [Problem(file or "", f"field '{f}'", m) for f, m in problems])


OptionsT = TypeVar("OptionsT", bound=BaseModel)


def read_options(adapter: object, model: type[OptionsT], options: dict[str, Any]) -> OptionsT:
    """A shipped adapter's constructor input: ``options`` read by the instance's ``Options`` when
    it extends ``model`` (the chunked variants), else by ``model`` itself, so that an author's
    subclass with an options model of its own still builds the shipped part from keywords."""
    declared = getattr(type(adapter), "Options", None)
    if isinstance(declared, type) and issubclass(declared, model):
        return declared.model_validate(options)
    return model.model_validate(options)


def check_options(cls: AdapterClass, options: dict[str, Any],
                  field: str) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """``options`` normalised by the class's ``Options`` model, and every problem found
    (as (field, message)); the options are returned unchanged when there are problems."""
    model = getattr(cls, "Options", None)
    if model is None:
        return dict(options), []
    try:
        return model.model_validate(options).model_dump(), []
    except ValidationError as exc:
        return dict(options), [(f"{field}.{loc}", msg) for loc, msg in option_problems(exc, model)]


def validate_options(
    cls: AdapterClass, options: dict[str, Any], field: str, file: str | None = None
) -> dict[str, Any]:
    """Check ``options`` against the class's ``Options`` model; return them normalised."""
    normalised, problems = check_options(cls, options, field)
    if problems:
        raise options_error(problems, file)
    return normalised


def create_adapter(name: str, options: dict[str, Any] | None = None) -> MemoryAdapter:
    """A fresh async adapter instance (synchronous classes are wrapped in threads)."""
    cls = resolve_adapter(name)
    opts = validate_options(cls, options or {}, f"{name}.options")
    instance = cls(**opts)
    if isinstance(instance, SyncMemoryAdapter):
        return ThreadedAdapter(instance)
    return instance
