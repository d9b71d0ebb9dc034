"""Strict checks of a dataset's ground truth against its own episodes.

They encode what makes a question a test of memory rather than of lookup, and they run on any
LENS dataset (the generator runs them on everything it writes; ``lens datasets validate
--strict`` runs them on a file):

- **spread**: for a synthesis question no single episode visible at its checkpoint holds 80% or
  more of its key facts, so one retrieval cannot answer it;
- **stated**: every key fact is stated in the text of at least one of its required refs;
- **visible**: every required ref is among the episodes streamed before the checkpoint;
- **not given away**: no key fact is stated in the question's own prompt, where echoing the
  question would earn it;
- **changes**: when the same prompt is asked again later and the later evidence includes episodes
  the earlier checkpoint could not see, the canonical answer differs.

A fact is "held" by a text when the text states it (the value of a fact in subject form,
"auth p99 latency: 224 ms") word for word, up to case, punctuation and
number format ("$9,740" = "9740", "12.50" = "12.5"): a check of what the text says, without the
value tolerance that the answer scorer allows itself.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections import defaultdict
from dataclasses import dataclass

from lens.core.errors import Problem
from lens.data.dataset import SYNTHESIS_TYPES, Dataset, Question
from lens.data.ground_truth_text import fact_subject

SPREAD_LIMIT = 0.8


_TOKEN = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?|[^\W\d_]+")


def _norm_number(tok: str) -> str:
    tok = tok.replace(",", "")
    if "." in tok:
        tok = tok.rstrip("0").rstrip(".")
    return tok.lstrip("0") or "0"


def tokens(text: str) -> list[str]:
    """Words and numbers of ``text``: case-folded, punctuation dropped, numbers normalised."""
    low = unicodedata.normalize("NFKC", text).casefold()
    return [_norm_number(t) if t[0].isdigit() else t for t in _TOKEN.findall(low)]


def phrase(text: str) -> str:
    return " " + " ".join(tokens(text)) + " "


class PreparedText:
    """An episode text prepared once for matching many facts against it."""

    def __init__(self, text: str) -> None:
        self._raw = text
        self._text: str | None = None  # tokenised on first use: most episodes of a large
        self._cache: dict[str, bool] = {}  # imported file are never consulted

    def holds(self, fact: str) -> bool:
        hit = self._cache.get(fact)
        if hit is None:
            if self._text is None:
                self._text = phrase(self._raw)
            # A fact in subject form ("auth p99 latency: 224 ms") is held where its value is.
            needle = phrase(fact_subject(fact)[1])
            hit = needle.strip() != "" and needle in self._text
            self._cache[fact] = hit
        return hit


def fact_in_text(fact: str, text: str) -> bool:
    """Whether ``text`` states ``fact`` (up to case, punctuation and number format)."""
    return PreparedText(text).holds(fact)


@dataclass(frozen=True)
class SpreadResult:
    share: float  # the largest share of the key facts that one visible episode holds
    episode_id: str | None


class DatasetChecker:
    """Runs the strict checks over one dataset; episode texts are prepared once."""

    def __init__(self, dataset: Dataset, file: str = "<dataset>") -> None:
        self.dataset = dataset
        self.file = file
        self._order: dict[str, list[str]] = {}
        self._texts: dict[str, PreparedText] = {}
        for scope in dataset.scopes:
            ordered = scope.ordered_episodes()
            self._order[scope.scope_id] = [e.episode_id for e in ordered]
            for e in ordered:
                self._texts[e.episode_id] = PreparedText(e.text)
        self._q_index = {q.question_id: i for i, q in enumerate(dataset.questions)}

    def visible(self, q: Question) -> list[str]:
        return self._order.get(q.scope_id, [])[: q.checkpoint_after]

    def spread(self, q: Question) -> SpreadResult:
        facts = q.ground_truth.key_facts
        best, where = 0.0, None
        if not facts:
            return SpreadResult(0.0, None)
        for eid in self.visible(q):
            text = self._texts[eid]
            share = sum(text.holds(f) for f in facts) / len(facts)
            if share > best:
                best, where = share, eid
        return SpreadResult(best, where)

    def _loc(self, q: Question, field: str = "") -> str:
        base = f"$.questions[{self._q_index[q.question_id]}]"
        return f"{base}.{field}" if field else base

    def check_question(self, q: Question) -> list[Problem]:
        problems: list[Problem] = []
        gt = q.ground_truth
        visible = set(self.visible(q))
        if q.question_type in SYNTHESIS_TYPES:
            if not gt.key_facts:
                problems.append(Problem(self.file, self._loc(q, "ground_truth.key_facts"),
                                        f"{q.question_type.value} question has no key facts, so "
                                        "it cannot be scored mechanically"))
            else:
                s = self.spread(q)
                if s.share >= SPREAD_LIMIT:
                    problems.append(Problem(
                        self.file, self._loc(q, "ground_truth.key_facts"),
                        f"episode {s.episode_id!r} alone holds {s.share:.0%} of the key facts "
                        f"(limit {SPREAD_LIMIT:.0%} for {q.question_type.value} questions)"))
        refs = [r.split("#", 1)[0] for r in gt.required_evidence_refs]
        for i, ref in enumerate(refs):
            if ref in self._texts and ref not in visible:
                problems.append(Problem(
                    self.file, self._loc(q, f"ground_truth.required_evidence_refs[{i}]"),
                    f"{ref!r} is streamed after checkpoint {q.checkpoint_after}; a question may "
                    "only rely on episodes it can see"))
        prompt = PreparedText(q.prompt)
        for i, fact in enumerate(gt.key_facts):
            if prompt.holds(fact):
                problems.append(Problem(
                    self.file, self._loc(q, f"ground_truth.key_facts[{i}]"),
                    f"{fact!r} is stated in the prompt itself, so echoing the question earns it"))
        known = [r for r in refs if r in self._texts]
        for i, fact in enumerate(gt.key_facts):
            if not known:
                problems.append(Problem(self.file, self._loc(q, f"ground_truth.key_facts[{i}]"),
                                        "key fact has no required ref to be stated in"))
                break
            if not any(self._texts[r].holds(fact) for r in known):
                problems.append(Problem(
                    self.file, self._loc(q, f"ground_truth.key_facts[{i}]"),
                    f"{fact!r} is not stated in any of the required refs {known}"))
        return problems

    def check_changes(self) -> list[Problem]:
        """The same prompt asked at two checkpoints must change its answer when the later one
        relies on evidence the earlier checkpoint could not see."""
        problems: list[Problem] = []
        series: dict[tuple[str, str], list[Question]] = defaultdict(list)
        for q in self.dataset.questions:
            series[(q.scope_id, q.prompt.strip().lower())].append(q)
        for qs in series.values():
            qs.sort(key=lambda q: q.checkpoint_after)
            for early, late in itertools.pairwise(qs):
                if late.checkpoint_after == early.checkpoint_after:
                    continue
                seen = set(self.visible(early))
                new = [r for r in late.ground_truth.required_evidence_refs
                       if r.split("#", 1)[0] not in seen]
                same = (late.ground_truth.canonical_answer.strip()
                        == early.ground_truth.canonical_answer.strip())
                if new and same:
                    problems.append(Problem(
                        self.file, self._loc(late, "ground_truth.canonical_answer"),
                        f"same answer as {early.question_id!r} (checkpoint "
                        f"{early.checkpoint_after}) although it relies on later evidence "
                        f"{new[:3]}"))
        return problems

    def problems(self) -> list[Problem]:
        out: list[Problem] = []
        for q in self.dataset.questions:
            out.extend(self.check_question(q))
        out.extend(self.check_changes())
        return out


def strict_problems(dataset: Dataset, file: str = "<dataset>") -> list[Problem]:
    """Every strict-check problem of ``dataset`` (empty when it passes)."""
    return DatasetChecker(dataset, file).problems()
