"""mem0 (optional extra ``lens[mem0]``): mem0's ``Memory`` run fully locally.

mem0 stores memories in a local Qdrant collection (a folder, no server) and its history in
SQLite; lens gives it the same numpy MiniLM embedder as the ``vector`` adapter (cached, with the
same ``encoder`` option: ``contextual`` or ``static``), and turns mem0's telemetry off. Two modes:

- raw (default): every episode (or chunk, with ``chunk_chars``) is stored verbatim
  (``infer=False``); refs are episode ids or ``episode_id#cN``. This measures mem0's storage and
  ranking, not its extraction.
- extraction: when ``llm`` names a lens model config (``{"model": "llama_cpp/…"}``, any provider
  lens speaks), mem0 asks that model to extract facts from each episode and stores those. Refs of
  extracted memories are ``mem0:<uuid>`` (declared as synthetic), and each carries the episode it
  came from in its metadata. mem0's extraction prompt is long (about 8,000 tokens per episode),
  so on a small local model this mode takes minutes per episode. Its replies are cached where
  the run caches (``RunCacheOptions``).
Filters: ``start_date`` / ``end_date`` (ISO-8601, inclusive), applied to the episode timestamp
after mem0 ranks a wider candidate set.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from pydantic import ConfigDict, Field

from lens.adapters.chunking import Unit, episode_units, split_ref
from lens.adapters.embedder import Embedder, EmbedderOptions
from lens.adapters.filters import DATE_FILTERS, search_bounds
from lens.adapters.options import UnitOptions
from lens.adapters.snippet import best_window, query_terms
from lens.core.distribution import install_hint
from lens.core.envscope import environment
from lens.core.errors import ConfigError
from lens.data.config import CacheConfig, ModelConfig
from lens.data.dataset import Episode, parse_timestamp
from lens.memory.adapter import (
    CapabilityManifest,
    Document,
    ModelUsage,
    SearchResult,
    SyncMemoryAdapter,
    read_options,
)
from lens.memory.listing import MAX_ITEMS, MemoryItem, MemoryListing
from lens.memory.run_cache import RunCacheOptions

SYNTHETIC_PREFIX = "mem0:"
_COLLECTION = "lens"


class Mem0Options(RunCacheOptions, EmbedderOptions, UnitOptions):
    model_config = ConfigDict(extra="forbid")

    path: str | None = Field(default=None, description="folder for mem0's stores; temporary "
                             "(removed at close) when unset")
    llm: dict[str, Any] | None = Field(default=None, description="a lens model config; "
                                       "enables LLM extraction mode")
    max_cost_usd: float | None = Field(
        default=None, gt=0, description="stop mem0's extraction calls past this known spend (its "
        "client is its own: the run's max_cost_usd does not count them)")


def _import_mem0() -> Any:
    # mem0 reads these when it is first imported: no telemetry, no writes to the home folder.
    # They are set for the import only; lens leaves the environment as it found it.
    try:
        with environment(MEM0_TELEMETRY="False",
                         MEM0_DIR=str(Path(tempfile.gettempdir()) / "lens-mem0")):
            import mem0
            from mem0.embeddings.base import EmbeddingBase
            from mem0.llms.base import LLMBase
    except ImportError:
        raise ConfigError(f"adapter 'mem0' needs mem0ai: {install_hint('mem0')}") from None
    # If mem0 was imported before (by the caller, or a test), the environment came too late:
    # switch its telemetry flags off where they were copied and stop any client it started.
    import mem0.memory.main as mem0_main
    import mem0.memory.telemetry as mem0_telemetry

    mem0_telemetry.MEM0_TELEMETRY = False
    mem0_main.MEM0_TELEMETRY = False  # mem0's own switch
    mem0_telemetry.client_telemetry.close()
    for name in ("mem0", "mem0.memory.main"):
        logging.getLogger(name).setLevel(logging.ERROR)
    return mem0, EmbeddingBase, LLMBase


def _make_embedder(base: type, embedder: Embedder) -> Any:
    class LensEmbedding(base):  # base imported at run time
        def __init__(self) -> None:
            super().__init__(None)

        def embed(self, text: str, memory_action: str | None = None) -> list[float]:
            return [float(x) for x in embedder.embed([text])[0]]

        def embed_batch(self, texts: list[str], memory_action: str = "add") -> list[list[float]]:
            return [[float(x) for x in v] for v in embedder.embed(list(texts))]

    return LensEmbedding()


def _make_llm(base: type, config: ModelConfig, cache: CacheConfig, max_cost_usd: float | None,
              on_call: Callable[[ModelUsage], None]) -> Any:
    """A mem0 LLM that answers through the lens model stack (retry, limits, cache, metering)."""
    import anyio
    import anyio.from_thread

    from lens.models.base import CompletionRequest, Message, Role
    from lens.models.factory import create_client

    client = create_client(config, cache=cache, max_cost_usd=max_cost_usd)

    class LensLLM(base):  # base imported at run time
        def __init__(self) -> None:
            self.config = None

        def generate_response(self, messages: list[dict[str, str]],
                              response_format: Any = None, tools: Any = None,
                              tool_choice: str = "auto", **kwargs: Any) -> str:
            # mem0 sends the roles lens's Message takes (system, user, assistant) as plain str.
            request = CompletionRequest(
                messages=[Message(role=cast(Role, m["role"]), content=m.get("content") or "")
                          for m in messages],
                role="adapter", temperature=config.temperature, max_tokens=config.max_tokens,
                response_schema={"type": "object"} if response_format else None,
            )
            try:
                # Inside lens the adapter runs in an anyio worker thread: use the run's loop.
                completion = anyio.from_thread.run(client.complete, request)
            except RuntimeError:
                completion = anyio.run(client.complete, request)
            # Every call mem0 makes counts in the adapter's model_usage (the run's memory cost).
            on_call(ModelUsage.of_call(completion))
            return completion.text

        def close(self) -> None:
            try:
                anyio.from_thread.run(client.aclose)
            except RuntimeError:
                anyio.run(client.aclose)

    return LensLLM()


class Mem0Adapter(SyncMemoryAdapter):
    Options = Mem0Options

    def __init__(self, **options: Any) -> None:
        self.opts = read_options(self, Mem0Options, options)
        o = self.opts
        self.llm_config = ModelConfig.model_validate(o.llm) if o.llm is not None else None
        self.extract = self.llm_config is not None
        self.model_cache = o.run_cache()
        self.embedder = Embedder(o.model, o.embedding_cache, encoder=o.encoder)
        self._own_dir = o.path is None
        self.path = Path(o.path) if o.path else None
        self._memory: Any = None
        self._lock = threading.RLock()
        self._scope = "default"
        self._episodes: dict[str, Episode] = {}
        self._units: dict[str, Unit] = {}
        self._mem_ids: dict[str, str] = {}  # our ref -> mem0 memory id (raw mode)
        self._usage = ModelUsage(cost_usd=0.0)

    # mem0 is built on first use, so listing or validating the adapter costs nothing.
    @property
    def memory(self) -> Any:
        with self._lock:
            if self._memory is None:
                self._memory = self._build()
            return self._memory

    def _build(self) -> Any:
        mem0, embedding_base, llm_base = _import_mem0()
        if self.path is None:
            self.path = Path(tempfile.mkdtemp(prefix="lens-mem0-"))
        self.path.mkdir(parents=True, exist_ok=True)
        config = {
            "vector_store": {"provider": "qdrant", "config": {
                "collection_name": _COLLECTION, "path": str(self.path / "qdrant"),
                "embedding_model_dims": self.embedder.encoder.dim, "on_disk": True}},
            # Placeholders: both are replaced below before anything is called.
            "embedder": {"provider": "openai", "config": {"api_key": "unused",
                                                          "embedding_dims": 384}},
            "llm": {"provider": "openai", "config": {"api_key": "unused"}},
            "history_db_path": str(self.path / "history.db"),
        }
        memory = mem0.Memory.from_config(config)
        memory.embedding_model = _make_embedder(embedding_base, self.embedder)
        if self.llm_config is not None:
            memory.llm = _make_llm(llm_base, self.llm_config, self.model_cache,
                                   self.opts.max_cost_usd, self._add_usage)
        return memory

    def reset(self, scope_id: str) -> None:
        with self._lock:
            # mem0's reset drops the collection and the history: nothing of the last scope stays.
            self.memory.reset()
            self._scope = scope_id
            self._episodes.clear()
            self._units.clear()
            self._mem_ids.clear()

    def ingest(self, episode: Episode) -> None:
        with self._lock:
            memory = self.memory
            self._episodes[episode.episode_id] = episode
            units = episode_units(episode, self.opts.chunk_chars, self.opts.chunk_overlap)
            for unit in units:
                self._units[unit.ref_id] = unit
                meta = {"ref_id": unit.ref_id, "episode_id": episode.episode_id,
                        "timestamp": episode.timestamp.isoformat()}
                if self.extract:
                    memory.add([{"role": "user", "content": unit.text}], user_id=self._scope,
                               metadata=meta, infer=True)
                    continue
                old = self._mem_ids.pop(unit.ref_id, None)
                if old is not None:
                    memory.delete(old)
                added = memory.add(unit.text, user_id=self._scope, metadata=meta, infer=False)
                for item in added.get("results", []):
                    self._mem_ids[unit.ref_id] = item["id"]

    def _ref(self, item: dict[str, Any]) -> str:
        meta = item.get("metadata") or {}
        if not self.extract and meta.get("ref_id"):
            return str(meta["ref_id"])
        return SYNTHETIC_PREFIX + str(item["id"])

    def search(
        self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None
    ) -> list[SearchResult]:
        bounds = search_bounds(query, filters, limit, self.opts.max_results)
        if bounds is None:
            return []
        dates, k = bounds
        fetch = k if dates.empty else min(10 * k, 1000)
        with self._lock:
            found = self.memory.search(query, filters={"user_id": self._scope}, top_k=fetch,
                                       threshold=0.0)
        out: list[SearchResult] = []
        terms = query_terms(query)
        for item in found.get("results", []):
            meta = dict(item.get("metadata") or {})
            ts = meta.get("timestamp")
            if ts and not dates.admits(parse_timestamp(ts)):
                continue
            ref = self._ref(item)
            result_meta: dict[str, Any] = {"timestamp": ts} if ts else {}
            if ref != meta.get("episode_id") and meta.get("episode_id"):
                result_meta["episode_id"] = meta["episode_id"]
            out.append(SearchResult(
                ref_id=ref, text=best_window(str(item.get("memory", "")), terms,
                                             self.opts.snippet_chars),
                score=float(item["score"]) if item.get("score") is not None else None,
                metadata=result_meta))
            if len(out) >= k:
                break
        return out

    def retrieve(self, ref_id: str) -> Document | None:
        with self._lock:
            if ref_id.startswith(SYNTHETIC_PREFIX):
                return self._get_memory(ref_id, ref_id[len(SYNTHETIC_PREFIX):])
            _, chunk = split_ref(ref_id)
            if chunk is None and ref_id in self._episodes:
                ep = self._episodes[ref_id]
                return Document(ref_id=ref_id, text=ep.text,
                                metadata={"timestamp": ep.timestamp.isoformat()})
            mem_id = self._mem_ids.get(ref_id)
            if mem_id is None:
                return None
            return self._get_memory(ref_id, mem_id)

    def _get_memory(self, ref_id: str, mem_id: str) -> Document | None:
        try:
            item = self.memory.get(mem_id)
        except Exception:  # mem0/qdrant reject ids that are not UUIDs with various errors
            return None
        if not item or (item.get("user_id") not in (None, self._scope)):
            return None
        meta = {k: v for k, v in (item.get("metadata") or {}).items()
                if k in ("timestamp", "episode_id")}
        if meta.get("episode_id") == ref_id:
            meta.pop("episode_id")
        return Document(ref_id=ref_id, text=str(item.get("memory", "")), metadata=meta)

    def list_memory(self, scope_id: str, checkpoint: int) -> MemoryListing:
        """mem0's own listing (``Memory.get_all`` for the scope's user): the extracted facts, or
        the raw units in raw mode, each from the episode its metadata names, changed when mem0
        last updated it (mem0's clock)."""
        with self._lock:
            found = self.memory.get_all(filters={"user_id": self._scope}, top_k=MAX_ITEMS)
        rows = found.get("results", []) if isinstance(found, dict) else list(found or [])
        items = []
        for row in rows:
            meta = row.get("metadata") or {}
            when = row.get("updated_at") or row.get("created_at") or meta.get("timestamp")
            items.append(MemoryItem(
                item_id=self._ref(row), text=str(row.get("memory", "")),
                source_episodes=[str(meta["episode_id"])] if meta.get("episode_id") else [],
                changed_at=parse_timestamp(str(when)) if when else None))
        return MemoryListing(items=items)

    def get_capabilities(self) -> CapabilityManifest:
        mode = "LLM-extracted facts" if self.extract else "raw episodes (infer=False)"
        if not self.extract and self.opts.chunk_chars:
            mode = "raw chunks (infer=False, refs episode_id#cN)"
        return CapabilityManifest(
            search_modes=["semantic"],
            filter_fields=list(DATE_FILTERS),
            max_results=self.opts.max_results, memory_listing=True,
            synthetic_ref_prefixes=[SYNTHETIC_PREFIX] if self.extract else [],
            description=f"mem0 Memory (local Qdrant, {self.embedder.label}) over {mode}",
        )

    def model_usage(self) -> dict[str, Any] | None:
        """mem0's extraction calls so far (None in raw mode: it calls no model)."""
        return self._usage.model_dump() if self.extract else None

    def _add_usage(self, call: ModelUsage) -> None:
        self._usage += call

    def close(self) -> None:
        with self._lock:
            memory, self._memory = self._memory, None
            if memory is not None:
                client = getattr(memory.vector_store, "client", None)
                if client is not None:
                    client.close()
                db = getattr(memory, "db", None)
                if db is not None and hasattr(db, "close"):
                    db.close()
                llm = getattr(memory, "llm", None)
                if llm is not None and type(llm).__name__ == "LensLLM":
                    llm.close()
            self.embedder.close()
            if self._own_dir and self.path is not None:
                shutil.rmtree(self.path, ignore_errors=True)
                self.path = None
