"""Model-free metrics of one answered question.

Tier 1: evidence_grounding, fact_recall, evidence_coverage, budget_compliance.
Tier 2's rule-based metrics live here too, since they need no judge: insight_depth and
reasoning_quality.

Each function returns ``(value, detail)``; ``None`` means the metric cannot be computed for
this question (no key facts, no required evidence, no budget outcome), never a made-up 0 or 1.
"""

from __future__ import annotations

from typing import Any

from lens.scoring.context import ScoringItem
from lens.scoring.facts import FactMatcherSettings, match_facts
from lens.scoring.refs import check_citation, episode_of, future_refs, is_synthetic

Result = tuple[float | None, dict[str, Any]]

SUBSTANTIVE_CHARS = 50


def _plain_word(ref: str) -> bool:
    return ref.isalpha()


def citations(item: ScoringItem) -> tuple[list[str], list[str]]:
    """(refs cited, bracketed words that are not citations).

    Answers quote records, and records contain bracketed tags such as "[INFO]" or "[CRITICAL]";
    a bracketed plain word that is no episode and no ref the agent received is such a tag, not
    a claim of evidence. Anything with a digit, "_", "#", ":" or "-" is taken as a ref."""
    kept, ignored = [], []
    for ref in item.record.cited_refs:
        if (_plain_word(ref) and ref not in item.retrieved
                and ref not in item.scope_episodes
                and not is_synthetic(ref, item.synthetic_prefixes)):
            ignored.append(ref)
        else:
            kept.append(ref)
    return kept, ignored


def evidence_grounding(item: ScoringItem) -> Result:
    """Share of cited refs that the agent received this session and that exist (or are declared
    synthetic). An answer that cites nothing has no verifiable support and scores 0: otherwise
    never citing would be a way around the grounding gate."""
    cited, ignored = citations(item)
    extra: dict[str, Any] = {"ignored_tags": ignored} if ignored else {}
    leaked = future_refs([*item.record.retrieved_refs, *cited], item.future_episodes)
    if leaked:
        extra["future_leak"] = leaked
    if not cited:
        reason = "empty answer" if not item.record.answer.strip() else "no citations"
        return 0.0, {"cited": 0, "grounded": 0, "reason": reason, **extra}
    checks = [
        check_citation(ref, retrieved=item.retrieved, retrieved_episodes=item.retrieved_episodes,
                       scope_episodes=set(item.scope_episodes),
                       synthetic_prefixes=list(item.synthetic_prefixes),
                       future_episodes=item.future_episodes)
        for ref in cited
    ]
    grounded = sum(c.grounded for c in checks)
    detail: dict[str, Any] = {"cited": len(checks), "grounded": grounded, **extra}
    misses = [{"ref": c.ref, "reason": c.reason} for c in checks if not c.grounded]
    if misses:
        detail["misses"] = misses
    return grounded / len(checks), detail


def fact_recall(item: ScoringItem, settings: FactMatcherSettings | None = None) -> Result:
    facts = item.question.ground_truth.key_facts
    if not facts:
        return None, {"reason": "question has no key facts"}
    matches = match_facts(facts, item.record.answer, settings)
    found = sum(m.matched for m in matches)
    return found / len(facts), {"facts": [m.as_detail() for m in matches]}


def evidence_coverage(item: ScoringItem) -> Result:
    """Share of the required evidence episodes the agent retrieved or cited (chunks count for
    their episode)."""
    required = list(dict.fromkeys(item.question.ground_truth.required_evidence_refs))
    if not required:
        return None, {"reason": "question has no required evidence"}
    seen = item.retrieved_episodes | {episode_of(r) for r in item.record.cited_refs}
    seen_exact = item.retrieved | set(item.record.cited_refs)
    found = [r for r in required if r in seen_exact or episode_of(r) in seen]
    missing = [r for r in required if r not in found]
    return len(found) / len(required), {"required": len(required), "found": len(found),
                                        "missing": missing}


def budget_compliance(item: ScoringItem) -> Result:
    outcome = item.record.budget
    if outcome is None:
        return None, {"reason": "no budget outcome recorded"}
    detail: dict[str, Any] = {"stop_reason": outcome.stop_reason}
    if not outcome.compliant:
        detail["over"] = sorted(k for k, used in outcome.used.items()
                                if k in outcome.limits and used > outcome.limits[k])
    return (1.0 if outcome.compliant else 0.0), detail


def insight_depth(item: ScoringItem, grounding_detail: dict[str, Any] | None = None) -> Result:
    """1 when the answer draws on at least two distinct grounded sources (episodes, or declared
    synthetic refs), else 0. Hallucinated citations do not count."""
    bad = {m["ref"] for m in (grounding_detail or {}).get("misses", [])}
    sources = set()
    for ref in citations(item)[0]:
        if ref in bad:
            continue
        sources.add(ref if is_synthetic(ref, item.synthetic_prefixes) else episode_of(ref))
    return (1.0 if len(sources) >= 2 else 0.0), {"distinct_sources": len(sources)}


def reasoning_quality(item: ScoringItem) -> Result:
    """1 for a substantive answer (over 50 characters) produced with at least one successful tool
    call, else 0."""
    length = len(item.record.answer.strip())
    tools_ok = sum(1 for c in item.record.tool_calls if c.ok)
    ok = length > SUBSTANTIVE_CHARS and tools_ok > 0
    return (1.0 if ok else 0.0), {"answer_chars": length, "successful_tool_calls": tools_ok}
