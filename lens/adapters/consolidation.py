"""The shared machinery of the consolidating baselines (``summary``, ``core``, ``faceted``).

Each keeps every raw episode in an in-memory ``sqlite_fts`` store (so the agent can search and
retrieve them as usual) and, at each checkpoint's ``prepare``, folds the episodes that arrived
since the last checkpoint into a memory text with a model; that text is the adapter's standing
context. Folds take the pending episodes in timestamp order, and the runner only calls
``prepare`` once every episode up to the checkpoint is in and none after it, so no fold ever sees
a later episode.

Model calls go through lens's model stack (retry, endpoint limits, the response cache, cost) with
the role ``adapter``, cached where the run caches (``RunCacheOptions``); their usage is reported
by ``model_usage`` apart from the agent's, and ``max_cost_usd`` caps what the adapter itself may
spend. The model is named in the options (``model: llama_cpp/default``, ``openai/gpt-4o-mini``,
``scripted/replay`` …); folds run inside ``prepare``, so a slow model needs the adapter's
``call_timeout_s`` raised to match.
"""

from __future__ import annotations

from abc import abstractmethod
from datetime import datetime
from typing import Any, ClassVar

from pydantic import Field

from lens.adapters.sqlite_fts import SqliteFtsAdapter
from lens.data.config import ModelConfig
from lens.data.dataset import Episode
from lens.memory.adapter import (
    CapabilityManifest,
    Document,
    MemoryAdapter,
    ModelUsage,
    SearchResult,
    ThreadedAdapter,
)
from lens.memory.gateway_access import ModelChoice
from lens.memory.listing import MemoryItem, MemoryListing
from lens.memory.run_cache import RunCacheOptions
from lens.models.base import CompletionRequest, Message, ModelClient

SYSTEM = ("You maintain the long-term memory of an assistant that will later answer questions "
          "about a stream of timestamped records. Write plain text only. Keep exact numbers, "
          "names, dates and the record ids in square brackets, e.g. [scope_ep_004].")


class ConsolidationOptions(ModelChoice, RunCacheOptions):
    max_tokens: int = Field(default=400, ge=16, description="output tokens per model call")
    memory_chars: int = Field(default=4000, ge=200,
                              description="the memory text (standing context) is cut to this")
    episode_chars: int = Field(default=2000, ge=100,
                               description="each episode's text is cut to this in prompts")
    episodes_per_fold: int = Field(default=2, ge=1, description="episodes folded per call")
    max_results: int = Field(default=10, ge=1, le=100)
    max_cost_usd: float | None = Field(default=None, gt=0,
                                       description="stop calling the model past this spend")
    cache: bool = Field(default=True, description="use lens's model response cache (the run's; "
                        "off when the run's cache is off)")


def render_episodes(episodes: list[Episode], max_chars: int) -> str:
    return "\n\n".join(f"[{e.episode_id}] {e.timestamp.isoformat()}\n{e.text[:max_chars]}"
                       for e in episodes)


class ConsolidatingAdapter(MemoryAdapter):
    """Raw-episode search plus a model-written memory text offered as standing context."""

    Options: ClassVar[type[ConsolidationOptions]] = ConsolidationOptions
    kind = "consolidation"

    def __init__(self, *, client: ModelClient | None = None, **options: Any) -> None:
        self.opts = self.Options.model_validate(options)
        self.store = ThreadedAdapter(SqliteFtsAdapter(max_results=self.opts.max_results))
        self._client = client
        self._usage = ModelUsage(cost_usd=0.0)
        self.pending: list[Episode] = []
        self.memory = ""
        # The episodes folded into the memory so far, and the newest one's time: the notes'
        # sources and change time in the listing.
        self.folded: list[str] = []
        self.folded_at: datetime | None = None
        # (fold name, episode ids it saw), in call order: what each model call was shown.
        self.fold_log: list[tuple[str, list[str]]] = []

    @property
    def client(self) -> ModelClient:
        if self._client is None:
            from lens.models.factory import create_client

            config = ModelConfig.model_validate({**self.opts.model_options,
                                                 "model": self.opts.model})
            self._client = create_client(config, cache=self.opts.run_cache(enabled=self.opts.cache),
                                         max_cost_usd=self.opts.max_cost_usd)
        return self._client

    async def complete(self, fold: str, instruction: str, episodes: list[Episode]) -> str:
        """One model call (role ``adapter``); its usage is added to ``model_usage``."""
        self.fold_log.append((fold, [e.episode_id for e in episodes]))
        request = CompletionRequest(
            messages=[Message(role="system", content=SYSTEM),
                      Message(role="user", content=instruction)],
            role="adapter", temperature=0.0, max_tokens=self.opts.max_tokens,
        )
        completion = await self.client.complete(request)
        self._usage += ModelUsage.of_call(completion)
        return completion.text.strip()[: self.opts.memory_chars]

    def batches(self, episodes: list[Episode]) -> list[list[Episode]]:
        n = self.opts.episodes_per_fold
        return [episodes[i:i + n] for i in range(0, len(episodes), n)]

    @abstractmethod
    async def consolidate(self, episodes: list[Episode]) -> None:
        """Fold ``episodes`` (new since the last checkpoint, in time order) into ``memory``."""

    async def reset(self, scope_id: str) -> None:
        await self.store.reset(scope_id)
        self.pending = []
        self.memory = ""
        self.folded, self.folded_at = [], None
        self.on_reset()

    def on_reset(self) -> None:
        """Forget any per-fold state of a subclass."""

    async def ingest(self, episode: Episode) -> None:
        await self.store.ingest(episode)
        self.pending.append(episode)

    async def prepare(self, scope_id: str, checkpoint: int) -> None:
        await self.store.prepare(scope_id, checkpoint)
        new = sorted(self.pending, key=lambda e: e.timestamp)
        self.pending = []
        if new:
            await self.consolidate(new)
            self.folded.extend(e.episode_id for e in new)
            self.folded_at = new[-1].timestamp

    async def standing_context(self, scope_id: str, checkpoint: int) -> str | None:
        return self.memory or None

    def notes(self) -> dict[str, str]:
        """The model-written notes by name (the standing memory; a subclass adds its own)."""
        return {"memory": self.memory} if self.memory else {}

    async def list_memory(self, scope_id: str, checkpoint: int) -> MemoryListing:
        """The notes (``note:<name>``, from every episode folded so far) and the raw episodes
        the agent can also search."""
        notes = [MemoryItem(item_id=f"note:{name}", text=text, source_episodes=list(self.folded),
                            changed_at=self.folded_at) for name, text in self.notes().items()]
        stored = await self.store.list_memory(scope_id, checkpoint)
        return MemoryListing(items=[*notes, *(stored.items if stored else [])])

    async def model_usage(self) -> dict[str, Any] | None:
        return self._usage.model_dump()

    async def search(self, query: str, filters: dict[str, Any] | None = None,
                     limit: int | None = None) -> list[SearchResult]:
        return await self.store.search(query, filters, limit)

    async def retrieve(self, ref_id: str) -> Document | None:
        return await self.store.retrieve(ref_id)

    async def get_capabilities(self) -> CapabilityManifest:
        caps = await self.store.get_capabilities()
        return caps.model_copy(update={
            "standing_context": True, "memory_listing": True,
            "description": f"{self.kind} memory written by {self.opts.model} (standing "
                           f"context) over {caps.description}",
        })

    async def aclose(self) -> None:
        try:
            await self.store.aclose()
        finally:
            if self._client is not None:
                await self._client.aclose()
