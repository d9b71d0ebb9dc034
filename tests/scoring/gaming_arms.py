"""Answer shapes that try to win the scores by formatting instead of memory, built from the
records of a real run by rewriting each answer (the retrieval stays the run's own).

Each arm is a list of records to store as a run of its own and score with ``lens score``.
"""

from __future__ import annotations

from collections.abc import Callable

from bench.adversary_table import rewrite_answers
from lens.data.dataset import Dataset, Question
from lens.runs.records import QuestionRecord
from lens.scoring.text.claims import ScopeText
from lens.scoring.text.numbers import extract_numbers
from lens.scoring.text.refs import episode_of

VAGUE = ("The records show some movement over the period that is worth keeping an eye on; "
         "the reports discuss it in some detail.")


def _cite(refs: list[str]) -> str:
    return " ".join(f"[{r}]" for r in refs)


class ArmBuilder:
    """Rewrites answers given the dataset (ground truth and record texts)."""

    def __init__(self, dataset: Dataset) -> None:
        self.questions = {(q.scope_id, q.question_id): q for q in dataset.questions}
        self.texts = {e.episode_id: e.text for s in dataset.scopes for e in s.episodes}
        self.scopes = {s.scope_id: ScopeText({e.episode_id: e.text for e in s.episodes})
                       for s in dataset.scopes}

    def question(self, r: QuestionRecord) -> Question:
        return self.questions[(r.scope_id, r.question_id)]

    def received(self, r: QuestionRecord) -> list[str]:
        return list(dict.fromkeys(r.retrieved_refs))

    def canonical(self, r: QuestionRecord) -> str:
        """The canonical answer, citing the records it received that support it: the required
        evidence, or a record stating a key fact (when there is none, the first record)."""
        gt = self.question(r).ground_truth
        required = {episode_of(x) for x in gt.required_evidence_refs}
        scope = self.scopes[r.scope_id]
        refs = [x for x in self.received(r) if episode_of(x) in required
                or scope.states_fact(episode_of(x), gt.key_facts)] or self.received(r)[:1]
        return f"{gt.canonical_answer} {_cite(refs)}"

    def pasted(self, r: QuestionRecord) -> str:
        """Every record received, pasted whole, each cited."""
        return "\n\n".join(f"[{x}] {self.texts.get(episode_of(x), '')}"
                           for x in self.received(r))

    def numbers(self, r: QuestionRecord) -> str:
        """Only the figures of the records received, with every ref cited."""
        figures = [n.text for x in self.received(r)
                   for n in extract_numbers(self.texts.get(episode_of(x), ""))]
        return f"{', '.join(figures)} {_cite(self.received(r))}"

    def abstain(self, r: QuestionRecord) -> str:
        return f"There is not enough evidence to answer this. {_cite(self.received(r))}"

    def vague(self, r: QuestionRecord) -> str:
        return f"{VAGUE[:120]} {_cite(self.received(r)[:2])}"

    def policy(self, r: QuestionRecord) -> str:
        return r.answer

    def padded(self, r: QuestionRecord) -> str:
        """The canonical answer followed by every record received, pasted and cited."""
        return f"{self.canonical(r)}\n\n{self.pasted(r)}"

    def cite_all(self, r: QuestionRecord) -> str:
        """The canonical answer citing every record received."""
        return f"{self.question(r).ground_truth.canonical_answer} {_cite(self.received(r))}"

    def arms(self) -> dict[str, Callable[[QuestionRecord], str]]:
        return {"canonical": self.canonical, "policy": self.policy, "pasted": self.pasted,
                "numbers": self.numbers, "abstain": self.abstain, "vague": self.vague,
                "padded": self.padded, "cite_all": self.cite_all}

    def rewrite(self, records: list[QuestionRecord], arm: str) -> list[QuestionRecord]:
        return rewrite_answers(records, self.arms()[arm])
