"""The BEAM protocol: every rubric item of a probing question graded 0, 0.5 or 1 by a judge, and
event ordering by the rank agreement of the recalled sequence.

Definitions (implemented here from the BEAM paper, Tavakoli et al., 2025, and its released
``src/evaluation/compute_metrics.py`` and ``report_results.py``):

* Rubric score: one judge call per rubric item, each with the item, the question and the
  response; the judge replies with JSON whose ``score`` is 1 (complies), 0.5 (partly) or 0 (does
  not comply, or the response does not address the question). A question's score is the mean over
  its rubric items (``beam_rubric``). The released script adds ``int(score)`` for every ability
  but event ordering, so a partial 0.5 counts 0 there; ``beam_rubric_released`` is that figure.
* Event ordering (``beam_kendall_tau``): the response is split into lines; each line is matched
  to the first reference item (the rubric, in order) not yet matched that the judge calls the
  same event (yes/no), a matched line standing for its item. Over the union of reference items
  and lines (items not in a list ranked after every listed one) Kendall's tau-b of the two
  rankings is normalised to [0, 1] as (tau + 1) / 2. This is the figure the released report
  gives for event ordering.
* Per question ``beam_score`` is the normalised tau for event ordering and the rubric score
  otherwise; ``beam_score_released`` the same with the released rubric arithmetic. Each ability's
  figure is the mean over its questions (the report's mean over conversations of per-conversation
  means: the same when every conversation has the same number of questions of the ability, as in
  the release: two each); the overall figure is the mean of the ten abilities.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from lens.data.dataset import Question
from lens.scoring.protocols.base import Protocol, ProtocolTask, json_span, mean

ABILITIES = ("abstention", "contradiction_resolution", "event_ordering",
             "information_extraction", "instruction_following", "knowledge_update",
             "multi_session_reasoning", "preference_following", "summarization",
             "temporal_reasoning")
EVENT_ORDERING = "event_ordering"

RUBRIC_ID = "beam-rubric@1"
RUBRIC_PROMPT = """\
You grade whether a response meets one rubric criterion.

Question the user asked: {question}
Rubric criterion: {item}
Response to grade: {answer}

First decide whether the criterion asks for something to be present (a fact, a statement, a \
format) or to be absent (words such as "no", "not", "avoid"). A response that does not address \
the question scores 0 whatever the criterion.

Judge meaning, not wording: accept paraphrases and synonyms; ignore case, punctuation and \
spacing; treat numbers, amounts and dates written differently but equal in value as equal \
("$68,000" and "68k"). Ignore tone, length and hedging unless the criterion asks for a form. \
When the criterion joins several elements, all of them present is full compliance and some of \
them partial.

Scores: 1.0 the criterion is fully met (a required element present and right, or a forbidden \
one absent in a responsive answer); 0.5 it is partly met (the element present with small errors \
or incomplete, or a forbidden element mostly avoided); 0.0 it is not met.

Reply with only a JSON object: {{"score": 1.0 | 0.5 | 0.0, "reason": "<why>"}}"""

SAME_EVENT_ID = "beam-same-event@1"
SAME_EVENT_PROMPT = """\
Do these two snippets describe the same event or fact? Reply YES or NO and nothing else.

First snippet: {reference}
Second snippet: {line}"""

_SCORES = {0.0, 0.5, 1.0}


def _ability(q: Question) -> str | None:
    a = q.meta.get("ability")
    return a if a in ABILITIES else None


def _rubric(q: Question) -> list[str]:
    r = q.meta.get("rubric")
    return [str(x) for x in r] if isinstance(r, list) else []


def response_lines(answer: str) -> list[str]:
    """The recalled sequence as the released script reads it: the response's lines."""
    return answer.split("\n")


def align(reference: Sequence[str], lines: Sequence[str],
          same: Mapping[tuple[int, int], float | None]) -> list[str] | None:
    """Each line replaced by the first unmatched reference item the judge calls the same event
    (``same[(line, item)]``); None when a verdict the matching needs is unknown."""
    used: set[int] = set()
    out: list[str] = []
    for j, line in enumerate(lines):
        match = None
        for k in range(len(reference)):
            if k in used:
                continue
            verdict = same.get((j, k), 0.0) if not line.strip() else same.get((j, k))
            if verdict is None:
                return None
            if verdict >= 1.0:
                match = k
                break
        if match is None:
            out.append(line)
        else:
            used.add(match)
            out.append(reference[match])
    return out


def kendall_tau_norm(reference: Sequence[str], system: Sequence[str]) -> float | None:
    """(tau-b + 1) / 2 of the two rankings over their union; None when tau is undefined (a
    ranking with one value)."""
    from scipy.stats import kendalltau

    union = list(dict.fromkeys([*reference, *system]))
    tie = len(union) + 1

    def ranks(seq: Sequence[str]) -> list[int]:
        pos: dict[str, int] = {}
        for i, item in enumerate(seq):
            pos[item] = i + 1  # a repeated item keeps its last place, as a dict built in order
        return [pos.get(u, tie) for u in union]

    tau = kendalltau(ranks(reference), ranks(system), variant="b").statistic
    if tau is None or math.isnan(tau):
        return None
    return (float(tau) + 1) / 2


def _rubric_grades(q: Question, values: Mapping[str, float | None]) -> list[float] | None:
    """The judge's grade of each rubric item; None when one is unknown."""
    scores = [values.get(f"rubric_{i}") for i in range(len(_rubric(q)))]
    return None if any(s is None for s in scores) else [float(s or 0) for s in scores]


def _order_tau(q: Question, answer: str, values: Mapping[str, float | None]) -> float | None:
    """The normalised Kendall tau of the answer's order of the events against the rubric's,
    each answer line aligned to the event the judge found it the same as."""
    same = {(int(j), int(k)): v for name, v in values.items()
            if name.startswith("same_") for j, k in [name[5:].split("_")]}
    aligned = align(_rubric(q), response_lines(answer), same)
    return kendall_tau_norm(_rubric(q), aligned) if aligned is not None else None


def parse_score(text: str) -> float | None:
    data = json_span(text)
    value = data.get("score") if isinstance(data, dict) else None
    if value is None:
        found = re.search(r'"?score"?\s*[:=]\s*"?([01](?:\.\d+)?)', text)
        value = found.group(1) if found else None
    try:
        score = float(value) if value is not None else None
    except (TypeError, ValueError):
        return None
    return score if score in _SCORES else None


class BeamProtocol(Protocol):
    name = "beam"
    version = 1
    title = "BEAM"
    group_label = "ability"
    group_order = ABILITIES
    metrics = ("beam_score", "beam_score_released", "beam_rubric", "beam_kendall_tau")
    published_judge = "openai/gpt-4.1-mini"
    prompts: Mapping[str, str] = {RUBRIC_ID: RUBRIC_PROMPT, SAME_EVENT_ID: SAME_EVENT_PROMPT}
    source = ("BEAM's src/evaluation/compute_metrics.py (rubric judge, event-ordering "
              "Kendall tau) and report_results.py")

    def check(self, q: Question) -> str | None:
        if _ability(q) is None or not _rubric(q):
            return (f"question {q.question_id} has no BEAM ability and rubric in meta.ability / "
                    "meta.rubric (import the data with `lens datasets import --format beam`)")
        return None

    def group(self, q: Question) -> str:
        return _ability(q) or "?"

    def applies(self, metric: str, q: Question) -> bool:
        return metric != "beam_kendall_tau" or _ability(q) == EVENT_ORDERING

    def mechanical(self, q: Question, answer: str) -> dict[str, float | None]:
        return {}

    def tasks(self, q: Question, answer: str) -> dict[str, ProtocolTask]:
        out: dict[str, ProtocolTask] = {}
        for i, item in enumerate(_rubric(q)):
            out[f"rubric_{i}"] = ProtocolTask(RUBRIC_ID, RUBRIC_PROMPT.format(
                question=q.prompt, item=item, answer=answer))
        if _ability(q) == EVENT_ORDERING:
            # Every (line, item) pair is asked at once: the matching then reads the verdicts in
            # the released order, which asks them one by one and stops at the first match.
            for j, line in enumerate(response_lines(answer)):
                if not line.strip():
                    continue
                for k, item in enumerate(_rubric(q)):
                    out[f"same_{j}_{k}"] = ProtocolTask(
                        SAME_EVENT_ID, SAME_EVENT_PROMPT.format(reference=item, line=line),
                        max_tokens=5)
        return out

    def parse(self, prompt_id: str, text: str) -> float | None:
        if prompt_id == SAME_EVENT_ID:
            return 1.0 if "yes" in text.lower() else 0.0
        return parse_score(text)

    def combine(self, q: Question, answer: str, values: Mapping[str, float | None]
                ) -> dict[str, float | None]:
        ordering = _ability(q) == EVENT_ORDERING
        if not answer:
            return {"beam_score": 0.0, "beam_score_released": 0.0, "beam_rubric": 0.0,
                    "beam_kendall_tau": 0.0 if ordering else None}
        known = _rubric_grades(q, values)
        rubric = sum(known) / len(known) if known else None
        if ordering:
            tau = _order_tau(q, answer, values)
            return {"beam_score": tau, "beam_score_released": tau, "beam_rubric": rubric,
                    "beam_kendall_tau": tau}
        released = None if known is None else sum(int(s) for s in known) / len(known)
        return {"beam_score": rubric, "beam_score_released": released,
                "beam_rubric": rubric, "beam_kendall_tau": None}

    def overall(self, rows: Sequence[tuple[str, Mapping[str, float | None]]]
                ) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for metric in ("beam_score", "beam_score_released"):
            per = [mean([m.get(metric) for g, m in rows if g == a]) for a in ABILITIES]
            # The mean of the ten abilities; with one missing (or unknown) it is not defined.
            out[metric] = (None if any(v is None for v in per)
                           else sum(v for v in per if v is not None) / len(per))
        out["beam_question_mean"] = mean([m.get("beam_score") for _, m in rows])
        return out
