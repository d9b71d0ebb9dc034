"""A memory adapter that serves GoldEvidenceBench candidate sets to the lens agent.

It stores the log lines it is given and answers a search that names a tag with that tag's most
recent id-carrying lines, shaped by the same typed options as the standalone retrieval answerer
(k, wrong_type, order, drop_prob, authority_filter, rerank). It never sees ground truth: the entry
that order/drop treat as "gold" is the latest authoritative line it holds for the tag, which is
what the grammar makes correct for a direct query.

Use it in a lens config as ``name: goldevidence.lens_adapter:CandidateAdapter``.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from goldevidence.grammar import KEY_RE, Entry, parse_log_line
from goldevidence.seeding import rng_for
from goldevidence.selectors import LinearSelector, rerank
from lens import CapabilityManifest, Document, Episode, SearchResult, SyncMemoryAdapter

_WORD = re.compile(r"[a-z0-9][a-z0-9._-]*")


class CandidateOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    k: int = Field(default=4, ge=1, le=256)
    wrong_type: Literal["none", "same_key", "other_key"] = "none"
    order: Literal["shuffle", "gold_first", "gold_middle", "gold_last"] = "shuffle"
    drop_prob: float = Field(default=0.0, ge=0, le=1)
    authority_filter: bool = False
    rerank: Literal["none", "latest_step", "last_occurrence", "prefer_set_latest",
                    "prefer_update_latest", "linear"] = "none"
    selector_path: str | None = None
    seed: int = 0


def _gold_uid(same: list[tuple[Entry, str]]) -> str | None:
    """The id of the newest authoritative line among a key's lines, newest first."""
    auth = [x for x in same if x[0].authoritative]
    return auth[0][0].uid if auth else None


def _ordered(chosen: list[tuple[Entry, str]], gold: str | None, order: str,
             rng: random.Random) -> list[tuple[Entry, str]]:
    """The candidates in the ``order`` asked for: shuffled, or by step with the gold line
    first, last or in the middle."""
    if order == "shuffle":
        chosen.sort(key=lambda x: x[0].step)
        rng.shuffle(chosen)
        return chosen
    g = [x for x in chosen if x[0].uid == gold]
    rest = sorted((x for x in chosen if x[0].uid != gold), key=lambda x: x[0].step)
    mid = len(rest) // 2
    return {"gold_first": g + rest, "gold_last": rest + g}.get(
        order, rest[:mid] + g + rest[mid:])


class CandidateAdapter(SyncMemoryAdapter):
    Options = CandidateOptions

    def __init__(self, **options: Any) -> None:
        self.opts = CandidateOptions.model_validate(options)
        self.linear = (LinearSelector.load(Path(self.opts.selector_path))
                       if self.opts.selector_path else None)
        if self.opts.rerank == "linear" and self.linear is None:
            raise ValueError("rerank 'linear' needs selector_path")
        self.scope = ""
        self.docs: dict[str, Episode] = {}
        self.entries: list[tuple[Entry, str]] = []  # (entry, episode id)

    def reset(self, scope_id: str) -> None:
        self.scope = scope_id
        self.docs.clear()
        self.entries.clear()

    def ingest(self, episode: Episode) -> None:
        self.docs[episode.episode_id] = episode
        for line in episode.text.splitlines():
            e = parse_log_line(line)
            if e is not None:
                self.entries.append((e, episode.episode_id))

    def _candidates(self, key: str, query: str) -> list[tuple[Entry, str]]:
        o = self.opts
        rng = rng_for("goldevidence.candidates", o.seed, self.scope, len(self.docs), query)
        same = sorted((x for x in self.entries if x[0].key == key), key=lambda x: -x[0].step)
        gold = _gold_uid(same)
        chosen = self._with_wrong(key, same, same[: o.k])
        chosen = self._filtered(chosen, gold, rng)
        chosen = _ordered(chosen, gold, o.order, rng)
        pick = rerank(o.rerank, [x[0] for x in chosen], query, self.linear)
        return [chosen[pick]] if pick is not None else chosen

    def _with_wrong(self, key: str, same: list[tuple[Entry, str]],
                    chosen: list[tuple[Entry, str]]) -> list[tuple[Entry, str]]:
        """``chosen`` and the wrong candidate ``wrong_type`` asks for: the next older line of
        the key, or the newest line of another key."""
        if self.opts.wrong_type == "same_key" and len(same) > len(chosen):
            chosen.append(same[len(chosen)])
        elif self.opts.wrong_type == "other_key":
            other = sorted((x for x in self.entries if x[0].key != key), key=lambda x: -x[0].step)
            chosen += other[:1]
        return chosen

    def _filtered(self, chosen: list[tuple[Entry, str]], gold: str | None,
                  rng: random.Random) -> list[tuple[Entry, str]]:
        """``chosen`` less the gold line (with chance ``drop_prob``) and, with
        ``authority_filter``, less the commentary (unless nothing else is left)."""
        o = self.opts
        if gold and o.drop_prob and rng.random() < o.drop_prob:
            chosen = [x for x in chosen if x[0].uid != gold]
        if o.authority_filter:
            chosen = [x for x in chosen if x[0].authoritative] or chosen
        return chosen

    def search(self, query: str, filters: dict[str, Any] | None = None,
               limit: int | None = None) -> list[SearchResult]:
        keys = KEY_RE.findall(query)
        if keys:
            hits = self._candidates(keys[0], query)
            return [SearchResult(ref_id=eid, text=self.docs[eid].text, score=None)
                    for _, eid in hits]
        # No tag named: plain term overlap, most recent first among equals.
        terms = set(_WORD.findall(query.lower()))
        scored = []
        for i, (eid, ep) in enumerate(self.docs.items()):
            overlap = len(terms & set(_WORD.findall(ep.text.lower())))
            if overlap:
                scored.append((overlap, i, eid))
        scored.sort(reverse=True)
        cap = min(limit or self.opts.k, self.opts.k)
        return [SearchResult(ref_id=eid, text=self.docs[eid].text, score=float(s))
                for s, _, eid in scored[:cap]]

    def retrieve(self, ref_id: str) -> Document | None:
        ep = self.docs.get(ref_id)
        return Document(ref_id=ep.episode_id, text=ep.text) if ep else None

    def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest(search_modes=["tag"], max_results=max(self.opts.k + 1, 10),
                                  description="GoldEvidenceBench candidate sets: search a tag "
                                  "name such as tag.03 to get its recent UPDATE lines.")
