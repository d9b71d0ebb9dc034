"""Cognee (optional extra ``lens[cognee]``): Topoteretes' AI memory library, embedded in the unit's
own folder, with every model call through lens's model gateway.

Each episode is one Cognee data item (its id and timestamp first, then its text) added to the
unit's dataset, tagged with the episode's id as its node set, and cognified at once: Cognee cuts
it into chunks, asks the model for a knowledge graph (entities and relations) and a summary of
each chunk, and embeds chunks, summaries, entity names and graph edges. Its stores are the
embedded ones it ships: SQLite for its records, LanceDB for the vectors and Kuzu for the graph,
all in one folder per unit and emptied by ``reset``. Search is Cognee's ``CHUNKS`` search
(semantic search over the chunks, no model call); each result is a chunk of one episode's text,
referenced as ``<episode_id>#<Cognee's chunk id>`` (the episode read from the chunk's node set),
so a citation names the episode; ``retrieve`` returns the chunks search handed out and the
episodes by id. ``list_memory`` is Cognee's own listing of its graph (the graph engine's
``get_graph_data``): the chunks, their summaries, the entities and the relations between them.

Cognee keeps its configuration process-wide, so lens gives this adapter a process of its own
(see ``OWN_PROCESS`` in :mod:`lens.memory.adapter`); the few settings Cognee reads only from the
environment are set in that process (see :func:`_import_cognee`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import logging
import shutil
import tempfile
import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from pydantic import Field

from lens.core.distribution import install_hint
from lens.core.envscope import environment, keep_for_process
from lens.core.errors import ConfigError
from lens.core.logs import get_logger
from lens.data.dataset import Episode
from lens.memory.adapter import CapabilityManifest, Document, MemoryAdapter, SearchResult
from lens.memory.gateway_access import GatewayAccess, GatewayOptions
from lens.memory.listing import MemoryItem, MemoryListing

INSTALL = install_hint("cognee")
DATASET = "lens"
# The kinds of node in Cognee's graph that its listing gives as items (its class names).
CHUNK, SUMMARY, ENTITY = "DocumentChunk", "TextSummary", "Entity"
log = get_logger("lens.adapters.cognee")

# Cognee's configuration is global to the process: two live instances would share one store.
_live: list[CogneeAdapter] = []


class CogneeOptions(GatewayOptions):
    path: str | None = Field(default=None, description="folder for Cognee's stores; temporary "
                             "(removed at close) when unset")
    max_results: int = Field(default=10, ge=1, le=100)
    episode_chars: int = Field(default=6000, ge=100,
                               description="each episode's text is cut to this")
    max_tokens: int = Field(default=2048, ge=64, description="output tokens per model call "
                            "(Cognee's own default, 16384, lets a small model run on for many "
                            "minutes); chunks are at most half of it")
    structured_output: str = Field(
        default="json_schema", pattern="^(json_schema|json_object)$",
        description="how Cognee asks for its graph and summaries: json_schema (the schema goes "
                    "with the request, so a local model is held to it), or json_object (the "
                    "schema in the prompt only) for models that do not follow a schema")
    chunk_tokens: int | None = Field(default=None, ge=16, le=254, description="Cognee's chunk "
                                     "size in tokens, at most what the embedding model reads "
                                     "(254); Cognee's own choice (that, or max_tokens / 2 if "
                                     "less) when unset")


def _import_cognee() -> Any:
    """Cognee, imported with the settings it reads only from the environment.

    At import Cognee loads a ``.env`` file (the first one above its own install folder, into
    the process environment, over what is set) and opens a log file under the home folder: the
    ``.env`` is not read and the log goes to standard error, errors only. Two settings it reads
    at each call stay set in the adapter's own process: telemetry off (Cognee's documented
    ``TELEMETRY_DISABLED``) and no start-up "connection test" (a model call that is not memory
    work).
    """
    keep_for_process(TELEMETRY_DISABLED="1", COGNEE_SKIP_CONNECTION_TEST="true")
    try:
        import dotenv

        load_dotenv = dotenv.load_dotenv
        dotenv.load_dotenv = lambda *args, **kwargs: False  # a stub
        try:
            # Cognee's modules use names their libraries deprecate (warnings for Cognee's
            # authors, not for lens's users); the filters Cognee sets itself are kept.
            warnings.filterwarnings("ignore", module=r"cognee\.")
            with environment(COGNEE_LOG_FILE="false", LOG_LEVEL="ERROR",
                             LITELLM_LOCAL_MODEL_COST_MAP="True"):
                import cognee
                from cognee.infrastructure.databases.vector.embeddings import (
                    OpenAICompatibleEmbeddingEngine as engine_module,
                )
        finally:
            dotenv.load_dotenv = load_dotenv
    except ImportError as exc:
        raise ConfigError(f"adapter 'cognee' needs cognee: {INSTALL} ({exc})") from None
    import litellm

    # Cognee asks litellm's model table about the gateway's model names, which it does not
    # know; litellm would then print its provider list to standard output.
    litellm.suppress_debug_info = True
    for name in ("cognee", "litellm", "LiteLLM", "httpx", "openai"):
        logging.getLogger(name).setLevel(logging.ERROR)
    return cognee, engine_module.OpenAICompatibleEmbeddingEngine


@contextlib.asynccontextmanager
async def _notes_to_log() -> AsyncIterator[None]:
    """Cognee's database migrations (run when its records are first created) print notes
    ("table already exists") to standard output: they go to lens's debug log instead of the
    console."""
    notes = io.StringIO()
    try:
        with contextlib.redirect_stdout(notes):
            yield
    finally:
        if notes.getvalue().strip():
            log.debug("cognee: %s", notes.getvalue().strip())


class _LocalTokenizer:
    """Cognee's tokenizer interface over the gateway's embedding model's own tokenizer file.

    Cognee's chunker counts tokens with the embedding engine's tokenizer, and its
    OpenAI-compatible engine has none (every word would count as one token); lens's embedding
    model ships its tokenizer, so it is read from there (no network)."""

    def __init__(self, model: str, limit: int) -> None:
        from tokenizers import Tokenizer

        from lens.adapters.embedding import model_dir

        self._tok = Tokenizer.from_file(str(model_dir(model) / "tokenizer.json"))
        self._tok.no_truncation()
        self._tok.no_padding()
        self.max_completion_tokens = limit
        self.model_input_limit = limit

    def extract_tokens(self, text: str) -> list[Any]:
        return list(self._tok.encode(text, add_special_tokens=False).tokens)

    def count_tokens(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def decode_single_token(self, token: int) -> str:
        return self._tok.id_to_token(token) or ""


def llm_config(access: GatewayAccess, opts: CogneeOptions) -> dict[str, Any]:
    """Cognee's LLM settings for the unit's gateway."""
    # 'custom' is Cognee's provider for any OpenAI-compatible endpoint (through litellm).
    # Cognee asks for its structures through instructor: with the JSON schema in the request
    # (the gateway holds a local model to it), or in the prompt only.
    mode = "json_schema_mode" if opts.structured_output == "json_schema" else "json_mode"
    return {"llm_provider": "custom", "llm_model": f"openai/{access.chat_model}",
            "llm_instructor_mode": mode, "llm_endpoint": access.base_url,
            "llm_api_key": access.api_key, "llm_temperature": 0.0,
            "llm_max_completion_tokens": opts.max_tokens,
            # Cognee's structured-output calls send only llm_args, not its completion limit:
            # without this the gateway's default (512 tokens) cuts a graph off mid-way.
            "llm_args": {"max_tokens": opts.max_tokens}}


class CogneeAdapter(MemoryAdapter):
    Options = CogneeOptions
    closed: bool

    def __init__(self, **options: Any) -> None:
        self.opts = CogneeOptions.model_validate(options)
        # Checked before the gateway so that a listing names the missing extra; the import
        # itself (seconds, and Cognee reads its settings then) waits for a unit's gateway.
        if importlib.util.find_spec("cognee") is None:
            raise ConfigError(f"adapter 'cognee' needs cognee: {INSTALL}")
        access = self.opts.access()
        if access.embedding_model is None or access.embedding_dim is None:
            raise ConfigError("adapter 'cognee' needs the gateway's embedding model for "
                              f"Cognee's vector store: {INSTALL}")
        if any(not other.closed for other in _live):
            raise ConfigError("adapter 'cognee' keeps its configuration process-wide, so each "
                              "instance needs a process of its own: leave the adapter's "
                              "isolation at 'auto' (or 'process')")
        self.access: GatewayAccess = access
        self.temporary = self.opts.path is None
        self.folder = Path(self.opts.path or tempfile.mkdtemp(prefix="lens-cognee-"))
        self.folder.mkdir(parents=True, exist_ok=True)
        self.cognee, engine = _import_cognee()
        # Cognee's OpenAI-compatible embedding engine declares neither the tokenizer nor the
        # input limit that its chunker reads; both are the gateway's embedding model's.
        engine.max_completion_tokens = self._embedding_window()
        engine.tokenizer = _LocalTokenizer(access.embedding_model or "",
                                           engine.max_completion_tokens)
        self._configure()
        self.closed = False
        _live.append(self)
        self.episodes: dict[str, Episode] = {}
        # Chunk refs handed out by search -> their text, for retrieve.
        self.chunks: dict[str, Document] = {}

    def _embedding_window(self) -> int:
        from lens.adapters.embedding import window

        # The encoder reads this many tokens, two of them its own markers.
        return window(self.access.embedding_model or "") - 2

    def _configure(self) -> None:
        a, c = self.access, self.cognee.config
        c.system_root_directory(str(self.folder / "system"))
        c.data_root_directory(str(self.folder / "data"))
        from cognee.base_config import get_base_config

        get_base_config().cache_root_directory = str(self.folder / "cache")
        c.set_llm_config(llm_config(a, self.opts))
        c.set_embedding_config({"embedding_provider": "openai_compatible",
                                "embedding_model": a.embedding_model,
                                "embedding_endpoint": a.base_url, "embedding_api_key": a.api_key,
                                "embedding_dimensions": a.embedding_dim})

    async def reset(self, scope_id: str) -> None:
        # Cognee's own wipe: the stored texts, then its records, vectors and graph.
        async with _notes_to_log():
            await self.cognee.prune.prune_data()
            await self.cognee.prune.prune_system(graph=True, vector=True, metadata=True)
        self.episodes, self.chunks = {}, {}

    async def ingest(self, episode: Episode) -> None:
        text = episode.text[: self.opts.episode_chars]
        item = f"[{episode.episode_id}] {episode.timestamp.isoformat()}\n{text}"
        extra = {"chunk_size": self.opts.chunk_tokens} if self.opts.chunk_tokens else {}
        async with _notes_to_log():
            # The episode's id as the item's node set: Cognee tags each of its chunks with it.
            await self.cognee.add(item, dataset_name=DATASET, node_set=[episode.episode_id])
            await self.cognee.cognify(datasets=[DATASET], **extra)
        self.episodes[episode.episode_id] = episode

    async def search(self, query: str, filters: dict[str, Any] | None = None,
                     limit: int | None = None) -> list[SearchResult]:
        if not self.episodes or not query.strip():
            return []
        k = min(limit or self.opts.max_results, self.opts.max_results)
        found = await self.cognee.search(query, query_type=self.cognee.SearchType.CHUNKS,
                                         datasets=[DATASET], top_k=k)
        results: list[SearchResult] = []
        for group in found:
            for chunk in group.get("search_result") or []:
                episode_id = next((name for name in chunk.get("belongs_to_set") or []
                                   if name in self.episodes), None)
                if episode_id is None:
                    continue  # not a record of this unit's episodes: never handed out
                ref = f"{episode_id}#{chunk['id']}"
                self.chunks[ref] = Document(ref_id=ref, text=chunk["text"])
                results.append(SearchResult(ref_id=ref, text=chunk["text"]))
        return results[:k]

    async def retrieve(self, ref_id: str) -> Document | None:
        if "#" in ref_id:
            return self.chunks.get(ref_id)
        episode = self.episodes.get(ref_id)
        if episode is None:
            return None
        return Document(ref_id=ref_id, text=episode.text,
                        metadata={"timestamp": episode.timestamp.isoformat()})

    async def list_memory(self, scope_id: str, checkpoint: int) -> MemoryListing:
        """Cognee's listing of the unit's graph: every chunk (from the episode its node set
        names), every chunk summary and every entity (from the episodes of the chunks they were
        made from or found in), and every relation between two entities (from the chunks that
        hold both), each changed at the newest of those episodes' timestamps."""
        if not self.episodes:
            return MemoryListing()
        from cognee.modules.graph.methods import get_formatted_graph_data
        from cognee.modules.users.methods import get_default_user

        async with _notes_to_log():
            user = await get_default_user()
            datasets = await self.cognee.datasets.list_datasets(user)
            found = next((d for d in datasets if d.name == DATASET), None)
            if found is None:
                return MemoryListing()
            graph = await get_formatted_graph_data(found.id, user)
        nodes = [(n["id"], {**n["properties"], "name": n["label"], "type": n["type"]})
                 for n in graph["nodes"]]
        edges = [(e["source"], e["target"], e["label"]) for e in graph["edges"]]
        props = dict(nodes)
        kind = {nid: str(p.get("type", "")) for nid, p in nodes}
        episodes: dict[str, set[str]] = {nid: set() for nid in props}
        for src, dst, rel in edges:
            name = str(props.get(dst, {}).get("name", ""))
            if rel == "belongs_to_set" and kind.get(src) == CHUNK and name in self.episodes:
                episodes[src].add(name)
        for src, dst, _ in edges:
            for node, other in ((src, dst), (dst, src)):
                if kind.get(other) == CHUNK and kind.get(node) in (SUMMARY, ENTITY):
                    episodes[node] |= episodes[other]
        items = []
        for nid, p in nodes:
            if kind[nid] in (CHUNK, SUMMARY):
                text = str(p.get("text", ""))
            elif kind[nid] == ENTITY:
                text = f"{p.get('name', '')}: {p.get('description', '')}"
            else:
                continue
            items.append(self._item(nid, text, episodes[nid]))
        for src, dst, rel in edges:
            if kind.get(src) == ENTITY and kind.get(dst) == ENTITY:
                both = episodes[src] & episodes[dst]
                items.append(self._item(f"{src}>{rel}>{dst}", f"{props[src].get('name', '')} "
                                        f"{rel} {props[dst].get('name', '')}", both))
        return MemoryListing(items=items)

    def _item(self, item_id: str, text: str, episode_ids: set[str]) -> MemoryItem:
        return MemoryItem(item_id=f"cognee:{item_id}", text=text,
                          source_episodes=sorted(episode_ids),
                          changed_at=max((self.episodes[e].timestamp for e in episode_ids),
                                         default=None))

    async def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest(
            search_modes=["semantic"], max_results=self.opts.max_results, memory_listing=True,
            description=f"Cognee chunks (SQLite, LanceDB, Kuzu graph, embedded), its graph "
                        f"and summaries extracted by {self.opts.model} through lens's model "
                        f"gateway, embedded with {self.access.embedding_model}")

    async def _close_stores(self) -> None:
        """Close the database engines and HTTP clients Cognee and litellm keep process-wide
        (Cognee's caches drop them without closing them)."""
        from cognee.infrastructure.databases.graph.get_graph_engine import (
            _create_graph_engine,
            get_graph_engine,
        )
        from cognee.infrastructure.databases.relational import get_relational_engine
        from cognee.infrastructure.databases.relational.create_relational_engine import (
            create_relational_engine,
        )
        from cognee.infrastructure.databases.vector.create_vector_engine import (
            _create_vector_engine,
        )
        from cognee.infrastructure.databases.vector.embeddings.get_embedding_engine import (
            create_embedding_engine,
            get_embedding_engine,
        )
        from litellm.llms.custom_httpx.async_client_cleanup import close_litellm_async_clients

        # Each getter returns the cached engine; asked only when one is cached.
        if _create_graph_engine.cache_info().currsize:
            graph = await get_graph_engine()
            close = getattr(graph, "close", None)
            if close is not None:
                result = close()
                if hasattr(result, "__await__"):
                    await result
        if create_embedding_engine.cache_info().currsize:
            client = getattr(get_embedding_engine(), "_client", None)
            if client is not None:
                await client.close()
        if create_relational_engine.cache_info().currsize:
            await get_relational_engine().engine.dispose()
        for cache in (_create_graph_engine, _create_vector_engine, create_embedding_engine,
                      create_relational_engine):
            cache.cache_clear()
        await close_litellm_async_clients()

    async def aclose(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            await self._close_stores()
        finally:
            _live.remove(self)
            if self.temporary:
                shutil.rmtree(self.folder, ignore_errors=True)
