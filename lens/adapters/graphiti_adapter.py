"""Graphiti (optional extra ``lens[graphiti]``): Zep's temporal knowledge graph, on the embedded
Kuzu database, with every model call through lens's model gateway.

Each episode is one Graphiti episode (its text, its timestamp as the reference time). Graphiti
asks the model to extract entities, then the facts between them (edges, with when each became
true or stopped being true), resolves duplicates against the graph, and embeds names and facts;
the graph lives in an in-memory Kuzu database of the unit's own. Search is Graphiti's hybrid edge
search (BM25 through Kuzu's full-text index plus cosine over the fact embeddings, fused by
reciprocal rank); each result is a fact (``graphiti:<edge uuid>``, declared synthetic) whose
``metadata.episode_ids`` names the episodes it was extracted from, and ``retrieve`` returns those
episodes by id too. ``list_memory`` is Graphiti's own listing by group id: every fact
(``EntityEdge.get_by_group_ids``) and every entity with its summary (``EntityNode``), each from the
episodes that mention it. Graphiti's telemetry is switched off.
"""

from __future__ import annotations

import logging
import warnings
from datetime import datetime
from typing import Any

from pydantic import Field

from lens.adapters.chunking import episode_document
from lens.core.distribution import install_hint
from lens.core.errors import ConfigError
from lens.data.dataset import Episode
from lens.memory.adapter import CapabilityManifest, Document, MemoryAdapter, SearchResult
from lens.memory.gateway_access import GatewayAccess, GatewayOptions
from lens.memory.listing import MemoryItem, MemoryListing

SYNTHETIC_PREFIX = "graphiti:"
INSTALL = install_hint("graphiti")


class GraphitiOptions(GatewayOptions):
    max_results: int = Field(default=10, ge=1, le=100)
    episode_chars: int = Field(default=6000, ge=100,
                               description="each episode's text is cut to this")
    max_tokens: int = Field(default=2048, ge=64, description="output tokens per model call "
                            "(Graphiti's own default, 16384, lets a small model run on for "
                            "many minutes)")
    structured_output: str = Field(
        default="json_schema", pattern="^(json_schema|json_object)$",
        description="how Graphiti asks for JSON: json_schema, or json_object for models "
                    "that do not follow a schema")


def _import_graphiti() -> dict[str, Any]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import graphiti_core.telemetry.telemetry as telemetry
            import kuzu
            from graphiti_core import Graphiti
            from graphiti_core.cross_encoder.openai_reranker_client import OpenAIRerankerClient
            from graphiti_core.driver.driver import GraphProvider
            from graphiti_core.driver.kuzu_driver import KuzuDriver
            from graphiti_core.edges import EntityEdge, EpisodicEdge
            from graphiti_core.embedder.openai import OpenAIEmbedder, OpenAIEmbedderConfig
            from graphiti_core.errors import GroupsEdgesNotFoundError
            from graphiti_core.graph_queries import get_fulltext_indices
            from graphiti_core.helpers import get_default_group_id
            from graphiti_core.llm_client.config import LLMConfig
            from graphiti_core.llm_client.openai_generic_client import OpenAIGenericClient
            from graphiti_core.nodes import EntityNode, EpisodeType
    except ImportError as exc:
        raise ConfigError(f"adapter 'graphiti' needs graphiti-core and kuzu: {INSTALL} "
                          f"({exc})") from None
    # Graphiti sends usage events to its vendor unless told otherwise; lens never phones home.
    telemetry.is_telemetry_enabled = lambda: False
    logging.getLogger("graphiti_core").setLevel(logging.ERROR)
    return dict(kuzu=kuzu, Graphiti=Graphiti, Reranker=OpenAIRerankerClient,
                GraphProvider=GraphProvider, KuzuDriver=KuzuDriver, EntityEdge=EntityEdge,
                EpisodicEdge=EpisodicEdge, EntityNode=EntityNode, group_id=get_default_group_id,
                NoEdges=GroupsEdgesNotFoundError,
                Embedder=OpenAIEmbedder, EmbedderConfig=OpenAIEmbedderConfig,
                fulltext=get_fulltext_indices, LLMConfig=LLMConfig,
                LLMClient=OpenAIGenericClient, EpisodeType=EpisodeType)


class GraphitiAdapter(MemoryAdapter):
    Options = GraphitiOptions

    def __init__(self, **options: Any) -> None:
        self.opts = GraphitiOptions.model_validate(options)
        self.g = _import_graphiti()
        access = self.opts.access()
        if access.embedding_model is None or access.embedding_dim is None:
            raise ConfigError("adapter 'graphiti' needs the gateway's embedding model for "
                              f"Graphiti's fact and name embeddings: {INSTALL}")
        self.access: GatewayAccess = access
        self.graph: Any = None
        self.driver: Any = None
        self.episodes: dict[str, Episode] = {}
        # Graphiti's episode uuid -> lens episode id.
        self.episode_ids: dict[str, str] = {}

    def _new_graph(self) -> None:
        g, a = self.g, self.access
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Graphiti marks its Kuzu driver deprecated
            driver = g["KuzuDriver"](":memory:")
        # Graphiti's Kuzu driver creates the tables but not the full-text indexes its own
        # searches query; Kuzu ships the FTS extension, so they are made here.
        conn = g["kuzu"].Connection(driver.db)
        try:
            for query in g["fulltext"](g["GraphProvider"].KUZU):
                conn.execute(query)
        finally:
            conn.close()
        config = g["LLMConfig"](api_key=a.api_key, base_url=a.base_url, model=a.chat_model,
                                small_model=a.chat_model, temperature=0.0,
                                max_tokens=self.opts.max_tokens)
        llm = g["LLMClient"](config=config, max_tokens=self.opts.max_tokens,
                             structured_output_mode=self.opts.structured_output)
        embedder = g["Embedder"](g["EmbedderConfig"](
            api_key=a.api_key, base_url=a.base_url, embedding_model=a.embedding_model,
            embedding_dim=a.embedding_dim))
        self.driver = driver
        self.graph = g["Graphiti"](graph_driver=driver, llm_client=llm, embedder=embedder,
                                   cross_encoder=g["Reranker"](config=config))

    async def _close_graph(self) -> None:
        graph, self.graph = self.graph, None
        if graph is not None:
            await graph.close()

    async def reset(self, scope_id: str) -> None:
        await self._close_graph()
        self._new_graph()
        self.episodes, self.episode_ids = {}, {}

    async def ingest(self, episode: Episode) -> None:
        if self.graph is None:
            self._new_graph()
        result = await self.graph.add_episode(
            name=episode.episode_id, episode_body=episode.text[: self.opts.episode_chars],
            source=self.g["EpisodeType"].text, source_description="record",
            reference_time=episode.timestamp)
        self.episodes[episode.episode_id] = episode
        self.episode_ids[result.episode.uuid] = episode.episode_id

    def _metadata(self, edge: Any) -> dict[str, Any]:
        return {
            "episode_ids": [self.episode_ids[u] for u in edge.episodes if u in self.episode_ids],
            "valid_at": edge.valid_at.isoformat() if edge.valid_at else None,
            "invalid_at": edge.invalid_at.isoformat() if edge.invalid_at else None,
        }

    async def search(self, query: str, filters: dict[str, Any] | None = None,
                     limit: int | None = None) -> list[SearchResult]:
        if self.graph is None or not query.strip():
            return []
        k = min(limit or self.opts.max_results, self.opts.max_results)
        edges = await self.graph.search(query, num_results=k)
        return [SearchResult(ref_id=SYNTHETIC_PREFIX + e.uuid, text=e.fact,
                             metadata=self._metadata(e)) for e in edges[:k]]

    async def retrieve(self, ref_id: str) -> Document | None:
        if ref_id.startswith(SYNTHETIC_PREFIX):
            if self.driver is None:
                return None
            try:
                edge = await self.g["EntityEdge"].get_by_uuid(self.driver,
                                                              ref_id[len(SYNTHETIC_PREFIX):])
            except Exception:  # Graphiti raises its own EdgeNotFoundError for an unknown uuid
                return None
            return Document(ref_id=ref_id, text=edge.fact, metadata=self._metadata(edge))
        return episode_document(self.episodes, ref_id)

    async def _by_group(self, cls: Any) -> list[Any]:
        """Everything of ``cls`` in the graph, by Graphiti's own group-id listing (the episodes
        were added under the driver's default group); Graphiti raises on an empty group."""
        group = self.g["group_id"](self.driver.provider)
        try:
            return list(await cls.get_by_group_ids(self.driver, [group]))
        except self.g["NoEdges"]:
            return []

    def _changed(self, episode_ids: list[str], fallback: datetime | None) -> datetime | None:
        stamps = [self.episodes[e].timestamp for e in episode_ids if e in self.episodes]
        return max(stamps) if stamps else fallback

    async def list_memory(self, scope_id: str, checkpoint: int) -> MemoryListing:
        """Every fact and every entity Graphiti holds, by its group-id listings. A fact names
        the episodes it was extracted from, an entity those that mention it; either changed at
        the newest of those episodes' timestamps. A fact Graphiti has invalidated is listed
        with the date it stopped being true, as Graphiti keeps it."""
        if self.driver is None:
            return MemoryListing()
        items = []
        for edge in await self._by_group(self.g["EntityEdge"]):
            meta = self._metadata(edge)
            text = edge.fact
            if edge.invalid_at is not None:
                text += f" (no longer true from {edge.invalid_at.isoformat()})"
            items.append(MemoryItem(item_id=SYNTHETIC_PREFIX + edge.uuid, text=text,
                                    source_episodes=meta["episode_ids"],
                                    changed_at=self._changed(meta["episode_ids"],
                                                             edge.created_at)))
        mentions: dict[str, list[str]] = {}
        for mention in await self._by_group(self.g["EpisodicEdge"]):
            episode_id = self.episode_ids.get(mention.source_node_uuid)
            if episode_id is not None:
                mentions.setdefault(mention.target_node_uuid, []).append(episode_id)
        for node in await self._by_group(self.g["EntityNode"]):
            sources = sorted(set(mentions.get(node.uuid, [])))
            text = f"{node.name}: {node.summary}" if node.summary else node.name
            items.append(MemoryItem(item_id=f"{SYNTHETIC_PREFIX}entity:{node.uuid}", text=text,
                                    source_episodes=sources,
                                    changed_at=self._changed(sources, node.created_at)))
        return MemoryListing(items=items)

    async def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest(
            search_modes=["hybrid"], max_results=self.opts.max_results, memory_listing=True,
            synthetic_ref_prefixes=[SYNTHETIC_PREFIX],
            description=f"Graphiti temporal knowledge graph (embedded Kuzu), facts extracted "
                        f"by {self.opts.model} through lens's model gateway, embedded with "
                        f"{self.access.embedding_model}")

    async def aclose(self) -> None:
        await self._close_graph()
