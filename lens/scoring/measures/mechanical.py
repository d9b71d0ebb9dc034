"""Model-free metrics of one answered question.

Tier 1: evidence_grounding, fact_recall, citation_precision, evidence_coverage,
budget_compliance. Tier 2's rule-based metrics live here too, since they need no judge:
insight_depth and reasoning_quality. None of them can be earned by pasting records, listing
figures or citing everything: see :mod:`lens.scoring.text.claims` and docs/scoring.md.

Each function returns ``(value, detail)``; ``None`` means the metric cannot be computed for
this question (no key facts, no required evidence, no budget outcome), never a made-up 0 or 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lens.scoring.foundations.run_input import ScoringItem
from lens.scoring.measures.fact_recall import ConclusionItem, FactCredit, fact_recall_of
from lens.scoring.text.claims import (
    Atoms,
    Claims,
    allowance,
    split_claims,
    stuffing_factor,
    supported_share,
)
from lens.scoring.text.conclusion import check_conclusion
from lens.scoring.text.facts import AnswerText, FactMatcherSettings, fact_subjects, match_fact
from lens.scoring.text.refs import (
    check_citation,
    episode_of,
    future_refs,
    is_synthetic,
    unknown_refs,
)

Result = tuple[float | None, dict[str, Any]]


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


def _cites_evidence(item: ScoringItem) -> bool:
    """Whether the answer cites at least one record the agent received that exists."""
    return any(check_citation(ref, retrieved=item.retrieved,
                              retrieved_episodes=item.retrieved_episodes,
                              scope_episodes=set(item.scope_episodes),
                              synthetic_prefixes=list(item.synthetic_prefixes),
                              future_episodes=item.future_episodes).grounded
               for ref in citations(item)[0])


def _ref_findings(item: ScoringItem, cited: list[str], ignored: list[str]) -> dict[str, Any]:
    """What the detail notes of the refs whatever the grade: citation tags ignored, refs to
    episodes after the question, and ids the adapter handed out that name nothing."""
    extra: dict[str, Any] = {"ignored_tags": ignored} if ignored else {}
    leaked = future_refs([*item.record.retrieved_refs, *cited], item.future_episodes)
    if leaked:
        extra["future_leak"] = leaked
    nameless = unknown_refs(item.record.retrieved_refs, item.scope_episodes,
                            item.synthetic_prefixes)
    if nameless:
        # The adapter handed out ids that name nothing it ingested or declared (the checklist
        # names the adapter); a few are kept as examples.
        extra["unknown_refs"] = nameless[:5]
        extra["unknown_refs_count"] = len(nameless)
    return extra


def evidence_grounding(item: ScoringItem) -> Result:
    """Share of cited refs that the agent received this session and that exist (or are declared
    synthetic). An answer that cites nothing has no verifiable support and scores 0: otherwise
    never citing would be a way around the grounding gate."""
    cited, ignored = citations(item)
    extra = _ref_findings(item, cited, ignored)
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


@dataclass(frozen=True)
class Analysis:
    """What one answer claims, worked out once for every metric that needs it."""

    claims: Claims
    claimed: Atoms
    allowed: int
    stuffing: float


def analyse(item: ScoringItem) -> Analysis:
    gt = item.question.ground_truth
    claims = split_claims(item.record.answer, item.scope_text)
    claimed = Atoms.of(claims.text)
    allowed = allowance([gt.canonical_answer, *gt.key_facts])
    return Analysis(claims, claimed, allowed, stuffing_factor(claimed, allowed))


def _claims_detail(a: Analysis) -> dict[str, Any]:
    detail: dict[str, Any] = {"claimed_figures": a.claimed.count, "figure_allowance": a.allowed,
                              "stuffing_factor": round(a.stuffing, 4)}
    if a.claims.quoted:
        detail["quoted_sentences"] = len(a.claims.quoted)
        detail["quoted_example"] = a.claims.quoted[0][:160]
    if a.claims.unasserted:
        detail["unasserted_sentences"] = len(a.claims.unasserted)
    return detail


def fact_recall(item: ScoringItem, settings: FactMatcherSettings | None = None,
                analysis: Analysis | None = None) -> Result:
    """Share of the key facts, and of the conclusion when the question has one, that the
    answer states as claims: sentences pasted from the records do not count, and the share is
    discounted when the answer states far more figures than the question needs (see
    :mod:`lens.scoring.text.claims`). An answer whose conclusion contradicts the ground truth's, or
    that concludes both ways, scores 0: its facts argue for a wrong or no answer (see
    :mod:`lens.scoring.text.conclusion`). The value is the matcher's grades under the one rule
    every fact grader shares (:func:`lens.scoring.measures.fact_recall.fact_recall_of`)."""
    gt = item.question.ground_truth
    facts = gt.key_facts
    if not facts and not gt.conclusion:
        return None, {"reason": "question has no key facts"}
    a = analysis or analyse(item)
    prepared = AnswerText(a.claims.text)
    rivals = fact_subjects(facts)
    matches = [match_fact(f, prepared, settings, rivals) for f in facts]
    found = sum(m.matched for m in matches)
    detail: dict[str, Any] = {"facts": [m.as_detail() for m in matches], "stated": found,
                              **_claims_detail(a)}
    check = (check_conclusion(gt.conclusion, a.claims.text, settings, prepared)
             if gt.conclusion else None)
    cites = _cites_evidence(item) if check is not None else True
    credit = FactCredit(tuple(1.0 if m.matched else 0.0 for m in matches),
                        None if check is None else
                        ConclusionItem(check.status, check.credit, check.claim_stated, cites),
                        a.stuffing)
    if check is not None:
        detail["conclusion"] = {**check.as_detail(), "backed": credit.backed,
                                "cites_evidence": cites}
    if credit.void_reason:
        detail["reason"] = credit.void_reason
    return fact_recall_of(credit), detail


def _required_episodes(item: ScoringItem) -> list[str]:
    refs = item.question.ground_truth.required_evidence_refs
    return list(dict.fromkeys(episode_of(r) for r in refs))


def relevant_sources(item: ScoringItem, settings: FactMatcherSettings | None = None
                     ) -> tuple[list[str], list[str]]:
    """(distinct cited sources that are grounded and relevant, cited refs that are not).

    A cited episode is relevant when the question's required evidence names it or its text
    states one of the question's key facts; a declared synthetic ref the agent received is
    given the benefit of the doubt (its text is not known to the scorer)."""
    required = set(_required_episodes(item))
    facts = item.question.ground_truth.key_facts
    scope = item.scope_text
    good: dict[str, None] = {}
    bad: list[str] = []
    for ref in citations(item)[0]:
        check = check_citation(ref, retrieved=item.retrieved,
                               retrieved_episodes=item.retrieved_episodes,
                               scope_episodes=set(item.scope_episodes),
                               synthetic_prefixes=list(item.synthetic_prefixes))
        if not check.grounded:
            bad.append(ref)
        elif check.reason == "synthetic":
            good[ref] = None
        elif episode_of(ref) in required or (
                scope is not None and scope.states_fact(episode_of(ref), facts, settings)):
            good[episode_of(ref)] = None
        else:
            bad.append(ref)
    return list(good), bad


def citation_precision(item: ScoringItem, settings: FactMatcherSettings | None = None
                       ) -> Result:
    """Share of the cited refs that are grounded and relevant to the question (see
    :func:`relevant_sources`): citing every record received lowers it. An answer that cites
    nothing scores 0, as for grounding."""
    gt = item.question.ground_truth
    if not gt.required_evidence_refs and not gt.key_facts:
        return None, {"reason": "question has no required evidence and no key facts"}
    cited = citations(item)[0]
    if not cited:
        return 0.0, {"cited": 0, "reason": "no citations"}
    _, bad = relevant_sources(item, settings)
    relevant = len(cited) - len(bad)
    detail: dict[str, Any] = {"cited": len(cited), "relevant": relevant}
    if bad:
        detail["not_relevant"] = bad[:20]
    return relevant / len(cited), detail


def evidence_coverage(item: ScoringItem) -> Result:
    """Share of the required evidence episodes the agent received from a tool (chunks count for
    their episode). Citing a ref it never received earns nothing: grounding already marks it."""
    required = list(dict.fromkeys(item.question.ground_truth.required_evidence_refs))
    if not required:
        return None, {"reason": "question has no required evidence"}
    found = [r for r in required
             if r in item.retrieved or episode_of(r) in item.retrieved_episodes]
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


def insight_depth(item: ScoringItem, fact_value: float | None, sources: int) -> Result:
    """Key facts stated as claims, drawn from several relevant sources: the fact credit
    (``fact_recall``) times the share of two relevant grounded sources cited (of one, when the
    question needs a single record). An answer that states no finding has none, however many
    refs it cites. None when the question has no key facts."""
    if fact_value is None:
        return None, {"reason": "question has no key facts"}
    needed = min(2, max(1, len(_required_episodes(item))))
    spread = min(1.0, sources / needed)
    return fact_value * spread, {"relevant_sources": sources, "sources_needed": needed,
                                 "fact_credit": round(fact_value, 6)}


def reasoning_quality(item: ScoringItem, analysis: Analysis | None = None) -> Result:
    """Whether the figures the answer states as claims hold: the share of them found in the
    records the agent received, the question or the ground truth, times the stuffing factor.
    An answer that states no figure where the ground truth has some scores 0; None when the
    ground truth states no figure either."""
    a = analysis or analyse(item)
    gt = item.question.ground_truth
    truth = Atoms.of("\n".join([gt.canonical_answer, *gt.key_facts]))
    scope = item.scope_text
    support = [truth, Atoms.of(item.question.prompt)]
    if scope is not None:
        support += [scope.atoms_of(e) for e in sorted(item.retrieved_episodes)]
    share = supported_share(a.claimed, support)
    detail = _claims_detail(a)
    if share is None:
        if truth.count:
            return 0.0, {**detail, "reason": "the answer states no figure"}
        return None, {**detail, "reason": "neither the answer nor the ground truth states a "
                                          "figure"}
    detail["supported_share"] = round(share, 6)
    return share * a.stuffing, detail
