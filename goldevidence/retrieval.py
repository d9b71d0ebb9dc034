"""The retrieval answerer: build a candidate set of ledger entries for a query, optionally pick
one with a reranker, and answer (deterministically from the pick, or with a model).

All knobs are typed options; nothing is read from the environment.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from goldevidence.grammar import UID_RE, Entry, parse_book_ledger, parse_updates
from goldevidence.predictions import extract_json_object
from goldevidence.rows import PredictionLine, Row, Usage
from goldevidence.seeding import rng_for
from goldevidence.selectors import LinearSelector, rerank
from goldevidence.state import format_value, parse_value
from lens.models import CompletionRequest, Message, ModelClient

Rerank = Literal["none", "latest_step", "last_occurrence", "prefer_set_latest",
                 "prefer_update_latest", "linear"]


class RetrievalOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    k: int = Field(default=4, ge=1, le=256)
    wrong_type: Literal["none", "same_key", "other_key"] = "none"
    order: Literal["shuffle", "gold_first", "gold_middle", "gold_last"] = "shuffle"
    drop_prob: float = Field(default=0.0, ge=0, le=1)
    # Drop NOTE entries from the candidates (when any authoritative one remains).
    authority_filter: bool = False
    # Repeat the question after the candidates as well as before.
    query_sandwich: bool = False
    # Two passes: the model first picks an id, then answers from that line alone.
    pick_then_answer: bool = False
    # No model at all: answer straight from the reranker's pick.
    selector_only: bool = False
    rerank: Rerank = "none"
    selector_path: Path | None = None
    # Read candidates from the book's ledger (closed book) or the log (open book).
    source: Literal["book", "log"] = "book"
    seed: int = 0


@dataclass
class CandidateSet:
    entries: list[Entry]
    gold_uid: str | None
    dropped: bool = False
    diag: dict[str, int | bool | None] = field(default_factory=dict)


def _gold_uid(row: Row) -> str | None:
    ids = row.get("gold", {}).get("support_ids") or []
    return ids[0] if len(ids) == 1 else None


def _picked(pool: list[Entry], key: Any, opts: RetrievalOptions) -> list[Entry]:
    """The k latest entries of the row's key, plus the wrong one the options ask for."""
    same = sorted((e for e in pool if e.key == key), key=lambda e: e.step, reverse=True)
    chosen = same[: opts.k]
    if opts.wrong_type == "same_key" and len(same) > len(chosen):
        chosen.append(same[len(chosen)])
    elif opts.wrong_type == "other_key":
        others = sorted((e for e in pool if e.key != key), key=lambda e: e.step, reverse=True)
        if others:
            chosen.append(others[0])
    return chosen


def _ordered(chosen: list[Entry], gold: str | None, opts: RetrievalOptions,
             rng: random.Random) -> list[Entry]:
    """The candidates in the order the options ask for: shuffled, or the gold entry first,
    last or in the middle of the others (oldest first)."""
    if opts.order == "shuffle":
        chosen = sorted(chosen, key=lambda e: e.step)
        rng.shuffle(chosen)
        return chosen
    g = [e for e in chosen if e.uid == gold]
    rest = sorted((e for e in chosen if e.uid != gold), key=lambda e: e.step)
    if opts.order == "gold_first":
        return g + rest
    if opts.order == "gold_last":
        return rest + g
    return rest[: len(rest) // 2] + g + rest[len(rest) // 2:]


def build_candidates(row: Row, opts: RetrievalOptions) -> CandidateSet:
    meta = row.get("meta", {})
    as_of = meta.get("as_of_step")
    pool = (parse_book_ledger(row["book"], include_notes=True) if opts.source == "book"
            else parse_updates(row["document"], include_notes=True))
    pool = [e for e in pool if as_of is None or e.step <= as_of]
    gold = _gold_uid(row)
    rng = rng_for("goldevidence.retrieval", opts.seed, row["id"])
    chosen = _picked(pool, meta.get("key"), opts)
    dropped = False
    if gold and opts.drop_prob > 0 and rng.random() < opts.drop_prob:
        rest = [e for e in chosen if e.uid != gold]
        dropped = len(rest) < len(chosen)
        chosen = rest
    if opts.authority_filter:
        chosen = [e for e in chosen if e.authoritative] or chosen
    chosen = _ordered(chosen, gold, opts, rng)
    uids = [e.uid for e in chosen]
    return CandidateSet(chosen, gold, dropped, {
        "gold_in_candidates": gold in uids if gold else None,
        "gold_rank": uids.index(gold) + 1 if gold in uids else None,
        "candidates": len(chosen),
    })


def value_from_entry(row: Row, e: Entry | None) -> str | None:
    """The answer a single entry implies for the row's query."""
    if e is None or e.op != "SET":
        return None
    meta = row.get("meta", {})
    mode = meta.get("state_mode") or row.get("state_mode") or "kv"
    op = meta.get("derived_op") if meta.get("query_type") == "derived" else None
    raw = parse_value(mode, e.value)
    if op == "color":
        return str(e.value).split("-", 1)[0]
    if op == "parity":
        return None if raw is None else ("even" if int(raw) % 2 == 0 else "odd")
    if op == "count":
        return str(len(raw)) if raw else None
    if op == "reports":
        return e.key if e.value == meta.get("derived_manager") else None
    return format_value(mode, raw)


ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"value": {"type": ["string", "null"]},
                   "support_ids": {"type": "array", "items": {"type": "string"}, "maxItems": 3}},
    "required": ["value", "support_ids"],
}
PICK_SCHEMA: dict[str, Any] = {
    "type": "object", "properties": {"support_id": {"type": "string"}},
    "required": ["support_id"],
}
SYSTEM = ("You track the state of tags in a log. Only UPDATE lines marked SET or CLEAR change "
          "state; NOTE lines are commentary. The line with the highest step wins. Reply with "
          "JSON only.")


def _prompt(row: Row, cands: list[Entry], opts: RetrievalOptions,
            instruction: str) -> str:
    lines = "\n".join(e.ledger_line() for e in cands) or "(no candidate lines)"
    parts = [row["question"], "", "Candidate ledger lines:", lines, "", instruction]
    if opts.query_sandwich:
        parts += ["", row["question"]]
    return "\n".join(parts)


class RetrievalAnswerer:
    def __init__(self, opts: RetrievalOptions, client: ModelClient | None = None) -> None:
        self.opts = opts
        self.client = client
        self.linear = (LinearSelector.load(opts.selector_path)
                       if opts.rerank == "linear" and opts.selector_path else None)
        if opts.rerank == "linear" and self.linear is None:
            raise ValueError("rerank 'linear' needs selector_path (a train-selector output)")
        if client is None and not (opts.selector_only and opts.rerank != "none"):
            raise ValueError("without a model, set selector_only and a reranker other than none")

    async def answer(self, row: Row) -> PredictionLine:
        started = time.perf_counter()
        cs = build_candidates(row, self.opts)
        cands = cs.entries
        pick = rerank(self.opts.rerank, cands, row["question"], self.linear)
        usage = Usage(prompt_tokens=0, completion_tokens=0)
        passes = 0
        if pick is not None and self.opts.selector_only:
            e = cands[pick]
            value, support = value_from_entry(row, e), [e.uid]
        else:
            shown = [cands[pick]] if pick is not None else cands
            if self.opts.pick_then_answer and pick is None and cands:
                reply = await self._ask(row, cands, "Which line establishes the answer? Reply "
                                        'as {"support_id": "U......"}.', PICK_SCHEMA, usage)
                passes += 1
                uid = str((reply or {}).get("support_id", ""))
                shown = [e for e in cands if e.uid == uid] or cands
            reply = await self._ask(row, shown, 'Reply as {"value": ..., "support_ids": [...]}.',
                                    ANSWER_SCHEMA, usage)
            passes += 1
            reply = reply or {}
            value = reply.get("value")
            support = reply.get("support_ids") or []
            if not isinstance(support, list):
                support = [support]
        return {"id": row["id"], "value": value, "support_ids": support,
                "presented_ids": [e.uid for e in cands], "usage": usage, "passes": passes,
                "wall_s": round(time.perf_counter() - started, 4), "retrieval": cs.diag}

    async def _ask(self, row: Row, cands: list[Entry], instruction: str,
                   schema: dict[str, Any], usage: Usage) -> dict[str, Any] | None:
        assert self.client is not None
        req = CompletionRequest(
            messages=[Message(role="system", content=SYSTEM),
                      Message(role="user", content=_prompt(row, cands, self.opts, instruction))],
            response_schema=schema, temperature=0.0, max_tokens=128, role="agent",
        )
        out = await self.client.complete(req)
        usage["prompt_tokens"] += out.usage.prompt_tokens
        usage["completion_tokens"] += out.usage.completion_tokens
        return extract_json_object(out.text) or _loose(out.text)


def _loose(text: str) -> dict[str, Any] | None:
    """A reply that is not JSON but names an id: take the id, leave the value unknown."""
    ids = UID_RE.findall(text or "")
    return {"support_id": ids[0], "support_ids": ids[:1]} if ids else None


def dumps(pred: PredictionLine) -> str:
    return json.dumps(pred, ensure_ascii=False)
