"""LangMem (optional extra ``lens[langmem]``): LangChain's long-term memory manager, run locally.

Each episode goes to LangMem's ``MemoryStoreManager`` as one user message (its id and timestamp
first). LangMem searches the memories it already holds, asks the model (through trustcall's
tool calls) to insert new memories and update old ones, and writes them to a LangGraph
``InMemoryStore`` whose semantic index embeds each memory. Both the extraction calls and the
embeddings go through lens's model gateway, so they are this unit's memory cost; the model is
the adapter's ``model`` option (the local model by default, any provider lens speaks otherwise).

Search is the store's semantic search over the memories (``langmem:<key>`` refs, declared
synthetic); each result names the episodes whose ingest wrote or updated it
(``metadata.episode_ids``), and ``retrieve`` also returns those source episodes by id, so an
agent can ground an answer in the record a memory came from. ``list_memory`` is the store's own
listing of the namespace (``search`` without a query): every memory LangMem holds.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import Field

from lens.adapters.chunking import episode_document
from lens.core.distribution import install_hint
from lens.core.errors import ConfigError
from lens.data.dataset import Episode
from lens.memory.adapter import CapabilityManifest, Document, SearchResult, SyncMemoryAdapter
from lens.memory.gateway_access import GatewayOptions
from lens.memory.listing import MAX_ITEMS, MemoryItem, MemoryListing

SYNTHETIC_PREFIX = "langmem:"
NAMESPACE = ("memories", "lens")
INSTALL = install_hint("langmem")


class LangMemOptions(GatewayOptions):
    max_results: int = Field(default=10, ge=1, le=100)
    query_limit: int = Field(default=5, ge=1, le=50, description="memories LangMem reads "
                             "before it extracts from an episode")
    max_tokens: int = Field(default=1024, ge=16, description="output tokens per model call")
    episode_chars: int = Field(default=6000, ge=100,
                               description="each episode's text is cut to this")
    enable_deletes: bool = Field(default=False, description="let LangMem delete memories")
    instructions: str | None = Field(default=None,
                                     description="LangMem's extraction instructions; its own "
                                     "when unset")


def _import_langmem() -> Any:
    try:
        import langmem
        from langchain_openai import ChatOpenAI
        from langgraph.store.memory import InMemoryStore
    except ImportError as exc:
        raise ConfigError(f"adapter 'langmem' needs langmem: {INSTALL} ({exc})") from None
    return langmem, ChatOpenAI, InMemoryStore


class LangMemAdapter(SyncMemoryAdapter):
    Options = LangMemOptions

    def __init__(self, **options: Any) -> None:
        self.opts = LangMemOptions.model_validate(options)
        langmem, chat_openai, self._store_cls = _import_langmem()
        access = self.opts.access()
        if access.embedding_model is None or access.embedding_dim is None:
            raise ConfigError("adapter 'langmem' needs the gateway's embedding model for "
                              f"LangMem's semantic index: {INSTALL}")
        import openai

        for name in ("httpx", "openai", "langmem", "trustcall"):
            logging.getLogger(name).setLevel(logging.WARNING)
        self.access = access
        self._embedder = openai.OpenAI(base_url=access.base_url, api_key=access.api_key,
                                       max_retries=0)
        model = chat_openai(model=access.chat_model, base_url=access.base_url,
                            api_key=access.api_key, temperature=0.0,
                            max_tokens=self.opts.max_tokens, max_retries=0)
        extra = {"instructions": self.opts.instructions} if self.opts.instructions else {}
        self._make_manager = lambda store: langmem.create_memory_store_manager(
            model, namespace=NAMESPACE, store=store, query_limit=self.opts.query_limit,
            enable_deletes=self.opts.enable_deletes, **extra)
        self._new_store()

    def _embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        reply = self._embedder.embeddings.create(model=self.access.embedding_model or "",
                                                 input=list(texts), encoding_format="float")
        return [list(d.embedding) for d in sorted(reply.data, key=lambda d: d.index)]

    def _new_store(self) -> None:
        self.store = self._store_cls(index={"dims": self.access.embedding_dim,
                                            "embed": self._embed})
        self.manager = self._make_manager(self.store)
        self.episodes: dict[str, Episode] = {}
        # Memory key -> the episodes whose ingest wrote or updated it.
        self.sources: dict[str, list[str]] = {}

    def _versions(self) -> dict[str, Any]:
        items = self.store.search(NAMESPACE, limit=100_000)
        return {it.key: it.updated_at for it in items}

    def reset(self, scope_id: str) -> None:
        self._new_store()

    def ingest(self, episode: Episode) -> None:
        before = self._versions()
        text = episode.text[: self.opts.episode_chars]
        message = f"[{episode.episode_id}] {episode.timestamp.isoformat()}\n{text}"
        self.manager.invoke({"messages": [{"role": "user", "content": message}]})
        self.episodes[episode.episode_id] = episode
        for key, updated in self._versions().items():
            if before.get(key) != updated:
                sources = self.sources.setdefault(key, [])
                if episode.episode_id not in sources:
                    sources.append(episode.episode_id)

    @staticmethod
    def _text(value: dict[str, Any]) -> str:
        content = value.get("content")
        if isinstance(content, dict):
            inner = content.get("content")
            return inner if isinstance(inner, str) else str(content)
        return str(content if content is not None else value)

    def search(self, query: str, filters: dict[str, Any] | None = None,
               limit: int | None = None) -> list[SearchResult]:
        k = min(limit or self.opts.max_results, self.opts.max_results)
        items = self.store.search(NAMESPACE, query=query, limit=k)
        return [SearchResult(ref_id=SYNTHETIC_PREFIX + it.key, text=self._text(it.value),
                             score=it.score,
                             metadata={"episode_ids": list(self.sources.get(it.key, []))})
                for it in items]

    def retrieve(self, ref_id: str) -> Document | None:
        if ref_id.startswith(SYNTHETIC_PREFIX):
            key = ref_id[len(SYNTHETIC_PREFIX):]
            item = self.store.get(NAMESPACE, key)
            if item is None:
                return None
            return Document(ref_id=ref_id, text=self._text(item.value),
                            metadata={"episode_ids": list(self.sources.get(key, []))})
        return episode_document(self.episodes, ref_id)

    def list_memory(self, scope_id: str, checkpoint: int) -> MemoryListing:
        """Every memory in LangMem's namespace (the store's listing: ``search`` without a
        query), each from the episodes whose ingest wrote or updated it, changed at the newest
        of those episodes' timestamps (the store's own clock for a memory no ingest claimed)."""
        items = []
        for it in self.store.search(NAMESPACE, limit=MAX_ITEMS):
            sources = list(self.sources.get(it.key, []))
            stamps = [self.episodes[e].timestamp for e in sources if e in self.episodes]
            items.append(MemoryItem(item_id=SYNTHETIC_PREFIX + it.key,
                                    text=self._text(it.value), source_episodes=sources,
                                    changed_at=max(stamps) if stamps else it.updated_at))
        return MemoryListing(items=items)

    def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest(
            search_modes=["semantic"], max_results=self.opts.max_results, memory_listing=True,
            synthetic_ref_prefixes=[SYNTHETIC_PREFIX],
            description=f"LangMem memories extracted by {self.opts.model} through lens's model "
                        f"gateway, in a LangGraph InMemoryStore indexed with "
                        f"{self.access.embedding_model}")

    def close(self) -> None:
        self._embedder.close()
