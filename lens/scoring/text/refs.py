"""Ref ids: mapping chunk refs to their episode and deciding whether a citation is grounded.

An adapter may hand out a whole episode ("scope_ep_009") or a chunk of one ("scope_ep_009#c3");
both point into the same episode. Refs the adapter makes up itself (summaries, entity pages)
carry one of the prefixes it declares in ``CapabilityManifest.synthetic_ref_prefixes``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


def episode_of(ref: str) -> str:
    """The episode id a ref points into: the part before ``#``."""
    return ref.split("#", 1)[0]


def is_synthetic(ref: str, prefixes: Iterable[str]) -> bool:
    return any(p and ref.startswith(p) for p in prefixes)


@dataclass(frozen=True)
class CitationCheck:
    ref: str
    grounded: bool
    # "ok", "synthetic", "not_received" (the agent never got it from a tool this session),
    # "not_in_scope" (no such episode in the scope, and not a declared synthetic ref) or
    # "future" (an episode not yet ingested at the question's checkpoint).
    reason: str


def future_refs(refs: Iterable[str], future_episodes: frozenset[str]) -> list[str]:
    """The refs that point into episodes the memory system had not been given when the
    question was asked: it cannot hold them honestly, so they are a leak (the adapter read the
    dataset, or kept state across units), never evidence."""
    return sorted({r for r in refs if episode_of(r) in future_episodes})


def unknown_refs(refs: Iterable[str], scope_episodes: frozenset[str],
                 synthetic_prefixes: Iterable[str]) -> list[str]:
    """The refs that name no episode of the scope and carry no declared synthetic prefix: the
    adapter's own ids (a row id, an undeclared summary), which no citation can ground."""
    prefixes = list(synthetic_prefixes)
    return sorted({r for r in refs if episode_of(r) not in scope_episodes
                   and not is_synthetic(r, prefixes)})


def received(ref: str, retrieved: set[str], retrieved_episodes: set[str]) -> bool:
    """Whether a tool gave the agent this ref in its session.

    A cited chunk counts only when the adapter returned that very chunk: a chunk suffix added to
    an episode it handed out whole ("…_ep_031#c7") names text it never returned. A cited
    episode counts when the episode or any chunk of it was received: the agent saw text of the
    episode it names.
    """
    if ref in retrieved:
        return True
    if "#" in ref:
        return False
    return ref in retrieved_episodes


def check_citation(ref: str, *, retrieved: set[str], retrieved_episodes: set[str],
                   scope_episodes: set[str], synthetic_prefixes: list[str],
                   future_episodes: frozenset[str] = frozenset()) -> CitationCheck:
    if episode_of(ref) in future_episodes:
        return CitationCheck(ref, False, "future")
    synthetic = is_synthetic(ref, synthetic_prefixes)
    if not synthetic and episode_of(ref) not in scope_episodes:
        return CitationCheck(ref, False, "not_in_scope")
    if not received(ref, retrieved, retrieved_episodes):
        return CitationCheck(ref, False, "not_received")
    return CitationCheck(ref, True, "synthetic" if synthetic else "ok")
