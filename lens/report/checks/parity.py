"""Context parity: how much text each arm's memory handed the agent, per question.

Computed from the stored records alone (the agent's transcript and tool-call records), so every
run ever written can be measured: the characters of the memory's tool results (search results,
retrieved documents, extended tools; lens's own error and budget notices excluded) plus the
standing-context block in the system prompt. Tokens are lens's rough count (four characters a
token, ``lens/core/tokens.py``), the same for every arm whatever model ran, so arms compare on one
scale.

Three checklist rows read these numbers (``context_parity_checks``): an arm handed at least
``IMBALANCE_RATIO`` times the median context of another, an arm whose searches return more
than ``BYPASS_SHARE`` of the episodes ingested for most of its questions (retrieval bypassed, as
when a top-k covers every session), and an arm whose memory handed the agent nothing on any
question (a memory that stored nothing searchable, e.g. a model that extracted nothing, scores
like the floor and would otherwise pass unnoticed).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from lens.memory.oracle import ALTERNATIVE, CEILING, FLOOR
from lens.report.foundations.context import (
    QuestionContext,
    context_of,
    row_context,
    synthetic_prefixes_of,
)
from lens.report.foundations.data import QuestionRow, RunData
from lens.report.foundations.shapes import Check, ContextParity
from lens.runs.records import is_scored

__all__ = ["QuestionContext", "context_of", "context_parity", "context_parity_checks",
           "row_contexts", "synthetic_prefixes"]

# One arm's median context per question at least this many times another's warns.
IMBALANCE_RATIO = 2.0
# Searches returning more than this share of the ingested episodes on a median question warn.
BYPASS_SHARE = 0.5
# Below this many ingested episodes a top-k covers most of the scope by arithmetic, not by
# design: such questions are not counted for the bypass check.
BYPASS_MIN_EPISODES = 10
# Reference arms by their registered names: the floor receives nothing and the oracle only the
# evidence, so neither is a contender in the imbalance check; full_context and the oracle hand
# over whole episodes without a search by design, so the bypass check leaves them out.
NOT_CONTENDERS = frozenset({FLOOR, CEILING})
BYPASS_BY_DESIGN = frozenset({ALTERNATIVE, CEILING})
def synthetic_prefixes(run: RunData) -> dict[str, list[str]]:
    """Each unit's declared synthetic ref prefixes (they name no episode of the scope)."""
    return synthetic_prefixes_of(run.events)


def row_contexts(run: RunData, rows: Sequence[QuestionRow]) -> list[QuestionContext]:
    """The context of each finished session among ``rows`` (failed questions have none)."""
    prefixes = synthetic_prefixes(run)
    return [row_context(r, prefixes) for r in rows if is_scored(r.record.status)]


def _median(xs: Sequence[float]) -> float | None:
    return float(statistics.median(xs)) if xs else None


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def context_parity(run: RunData, rows: Sequence[QuestionRow]) -> ContextParity:
    ctx = row_contexts(run, rows)
    shares = [s for c in ctx if (s := c.scope_share) is not None]
    return ContextParity(
        questions=len(ctx),
        chars_median=_median([c.chars for c in ctx]),
        chars_mean=_mean([c.chars for c in ctx]),
        tokens_median=_median([c.tokens for c in ctx]),
        tokens_mean=_mean([c.tokens for c in ctx]),
        search_chars_mean=_mean([c.search_chars for c in ctx]),
        retrieve_chars_mean=_mean([c.retrieve_chars for c in ctx]),
        standing_chars_mean=_mean([c.standing_chars for c in ctx]),
        scope_share_median=_median(shares),
        scope_share_max=max(shares) if shares else None,
    )


def adapter_names(run: RunData) -> dict[str, str]:
    """Arm label → the registered adapter name it runs (from the run's condition)."""
    out: dict[str, str] = {}
    for a in run.condition.get("adapters", []):
        if isinstance(a, dict) and a.get("name"):
            out[str(a.get("label") or a["name"])] = str(a["name"])
    return out


@dataclass(frozen=True)
class _Arm:
    name: str
    adapter: str
    rows: list[QuestionRow]
    contexts: list[QuestionContext]


def _arms(runs: Sequence[RunData]) -> list[_Arm]:
    out = []
    for run in runs:
        names = adapter_names(run)
        prefixes = synthetic_prefixes(run)
        for label in run.adapters:
            rows = [r for r in run.rows_for(label) if is_scored(r.record.status)]
            ctx = [row_context(r, prefixes) for r in rows]
            shown = f"{run.run_id}:{label}" if len(runs) > 1 else label
            out.append(_Arm(shown, names.get(label, label), rows, ctx))
    return out


def _example(big: _Arm, small: _Arm) -> str:
    """The paired question where ``big`` got the most context relative to ``small``."""
    theirs = {r.match_key: c.chars for r, c in zip(small.rows, small.contexts, strict=True)}
    best: tuple[float, str, int, int] | None = None
    for r, c in zip(big.rows, big.contexts, strict=True):
        other = theirs.get(r.match_key)
        if other is None:
            continue
        ratio = c.chars / other if other else float("inf") if c.chars else 0.0
        if best is None or ratio > best[0]:
            best = (ratio, r.record.question_id, c.chars, other)
    if best is None:
        return ""
    return f"; e.g. question {best[1]}: {best[2]:,} vs {best[3]:,} characters"


def check_context_imbalance(runs: Sequence[RunData]) -> Check | None:
    """Warn when one contender arm's median context per question is at least twice another's."""
    arms = [a for a in _arms(runs) if a.adapter not in NOT_CONTENDERS and a.contexts]
    if len(arms) < 2:
        return None
    medians = {a.name: float(statistics.median(c.chars for c in a.contexts)) for a in arms}
    big = max(arms, key=lambda a: medians[a.name])
    small = min(arms, key=lambda a: medians[a.name])
    hi, lo = medians[big.name], medians[small.name]
    value = ", ".join(f"{a.name}: {medians[a.name]:,.0f}" for a in arms)
    unequal = hi > 0 and (lo == 0 or hi / lo >= IMBALANCE_RATIO)
    if not unequal:
        return Check(id="context_parity", title="context parity (median characters per question)",
                     status="pass", value=value,
                     detail=f"no arm receives {IMBALANCE_RATIO:g}× the context of another")
    ratio = "context where the other gets none" if lo == 0 else f"{hi / lo:.1f}× the context"
    return Check(
        id="context_parity", title="context parity (median characters per question)",
        status="warn", value=value,
        detail=(f"{big.name} receives {ratio} of {small.name} (median {hi:,.0f} vs {lo:,.0f} "
                f"characters per question{_example(big, small)}): a difference between them "
                "may be a difference in how much text the agent read, not in what the memory "
                "found"))


def check_retrieval_bypass(runs: Sequence[RunData]) -> Check | None:
    """Warn when an arm's searches return most of the ingested episodes on a median question."""
    parts: list[str] = []
    flagged: list[str] = []
    for arm in _arms(runs):
        if arm.adapter in BYPASS_BY_DESIGN:
            continue
        pairs = [(r, c) for r, c in zip(arm.rows, arm.contexts, strict=True)
                 if c.episodes_ingested >= BYPASS_MIN_EPISODES and c.scope_share is not None]
        if not pairs or not any(c.episodes_returned for _, c in pairs):
            continue
        median = float(statistics.median(c.scope_share or 0.0 for _, c in pairs))
        parts.append(f"{arm.name}: {median:.0%}")
        if median > BYPASS_SHARE:
            r, c = max(pairs, key=lambda p: p[1].scope_share or 0.0)
            flagged.append(f"{arm.name} (median {median:.0%}; e.g. question "
                           f"{r.record.question_id}: {c.episodes_returned} of "
                           f"{c.episodes_ingested} episodes)")
    if not parts:
        return None
    title = (f"searches return at most {BYPASS_SHARE:.0%} of the episodes ingested "
             "(median question)")
    if not flagged:
        return Check(id="retrieval_bypass", title=title, status="pass", value=", ".join(parts),
                     detail="retrieval selects among the episodes rather than returning them all")
    return Check(id="retrieval_bypass", title=title, status="warn", value=", ".join(parts),
                 detail=("retrieval bypassed: the searches of " + "; ".join(flagged)
                         + " return most of the scope, so the score measures the agent "
                         "reading everything, not the memory finding it (lower the top-k)"))


def check_empty_memory(runs: Sequence[RunData]) -> Check | None:
    """Warn for each arm (the floor aside) whose memory handed the agent no text on any of its
    questions."""
    arms = [a for a in _arms(runs) if a.adapter != FLOOR and a.contexts]
    if not arms:
        return None
    title = "each memory handed the agent some text"
    empty = [a for a in arms if all(c.chars == 0 for c in a.contexts)]
    if not empty:
        return Check(id="empty_memory", title=title, status="pass",
                     value=f"{len(arms)} arm(s)", detail="every memory returned text")
    names = ", ".join(f"{a.name} (0 characters on {len(a.contexts)} question(s))" for a in empty)
    return Check(id="empty_memory", title=title, status="warn", value=f"{len(empty)} empty",
                 failing=[a.name for a in empty],
                 detail=(f"{names}: the memory returned nothing to any search or standing "
                         "context, so the arm scores like no memory at all; check that its "
                         "ingest stored something searchable (a memory system whose model "
                         "extracted nothing, or whose store was not written, looks like this)"))


def context_parity_checks(runs: Sequence[RunData]) -> list[Check]:
    """The checklist rows of context parity (kept apart from the other rows)."""
    return [c for c in (check_context_imbalance(runs), check_retrieval_bypass(runs),
                        check_empty_memory(runs)) if c is not None]
