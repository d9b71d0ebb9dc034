"""A tiny memory system that makes its model calls the way third-party systems do: with the
openai SDK, pointed at lens's model gateway. Each episode's facts are extracted in JSON mode;
search embeds the query when the gateway has an embedding model (a call made while answering)
and ranks episodes by shared words."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import openai

from lens import GatewayOptions
from lens.data.dataset import Episode
from lens.memory.adapter import CapabilityManifest, Document, SearchResult, SyncMemoryAdapter

EXTRACT = "Extract the facts of this record as JSON {\"facts\": [...]}:\n"
_WORD = re.compile(r"[a-z0-9]+")


class Options(GatewayOptions):
    embed_queries: bool = True
    # Fail the ingest of this episode (1-based) once: while the file ``marker`` is absent.
    fail_once_at: int | None = None
    marker: str | None = None


class GatewayNotesAdapter(SyncMemoryAdapter):
    Options = Options

    def __init__(self, **options: Any) -> None:
        self.opts = Options.model_validate(options)
        access = self.opts.access()
        self.access = access
        self.client = openai.OpenAI(base_url=access.base_url, api_key=access.api_key,
                                    max_retries=0)
        self.docs: dict[str, str] = {}
        self.facts: dict[str, list[str]] = {}

    def reset(self, scope_id: str) -> None:
        self.docs, self.facts = {}, {}

    def ingest(self, episode: Episode) -> None:
        if self.opts.fail_once_at == len(self.docs) + 1 and self.opts.marker \
                and not Path(self.opts.marker).exists():
            Path(self.opts.marker).touch()
            raise RuntimeError("a planned failure, once")
        reply = self.client.chat.completions.create(
            model=self.access.chat_model, response_format={"type": "json_object"},
            messages=[{"role": "system", "content": "You extract facts."},
                      {"role": "user", "content": EXTRACT + episode.text}])
        facts = json.loads(reply.choices[0].message.content or "{}").get("facts", [])
        self.docs[episode.episode_id] = episode.text
        self.facts[episode.episode_id] = [str(f) for f in facts]

    def search(self, query: str, filters: dict[str, Any] | None = None,
               limit: int | None = None) -> list[SearchResult]:
        if self.opts.embed_queries and self.access.embedding_model:
            self.client.embeddings.create(model=self.access.embedding_model, input=[query])
        words = set(_WORD.findall(query.lower()))
        scored = sorted(((len(words & set(_WORD.findall(t.lower()))), ref)
                         for ref, t in self.docs.items()), reverse=True)
        return [SearchResult(ref_id=ref, text=self.docs[ref], score=float(s))
                for s, ref in scored[: limit or 5] if s > 0]

    def retrieve(self, ref_id: str) -> Document | None:
        text = self.docs.get(ref_id)
        return None if text is None else Document(ref_id=ref_id, text=text)

    def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest(description="facts extracted through lens's model gateway")
