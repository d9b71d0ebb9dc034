"""Import LoCoMo (``locomo10.json``) into the LENS format.

Each sample (one long conversation between two speakers) becomes a scope; each session becomes
one episode, time-stamped from its ``session_N_date_time`` line; every QA item becomes a question
asked after the last session. Evidence dialogue ids (``D3:12``) are mapped to the episodes that
hold them, and the original category, evidence and adversarial answer are kept in the question's
``meta``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Required, TypedDict, cast

from lens.data.dataset import QuestionType
from lens.data.importers.common import Locator, answer_text, answer_truth, read_source
from lens.data.importers.records import (
    DatasetJson,
    EpisodeJson,
    GroundTruthJson,
    QuestionJson,
    ScopeJson,
)

CATEGORIES: dict[int, tuple[str, QuestionType]] = {
    1: ("multi-hop", QuestionType.LONGITUDINAL),
    2: ("temporal", QuestionType.TEMPORAL),
    3: ("open-domain", QuestionType.COUNTERFACTUAL),
    4: ("single-hop", QuestionType.NULL_HYPOTHESIS),
    5: ("adversarial", QuestionType.NEGATIVE),
}
NOT_MENTIONED = "Not mentioned in the conversation."

_SESSION = re.compile(r"^session_(\d+)$")
_DIA = re.compile(r"D(\d+):(\d+)")
_MONTHS = {m: i + 1 for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september",
     "october", "november", "december"])}
_DATE = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(?:(\d{1,2})\s+([a-z]+)|"
                   r"([a-z]+)\s+(\d{1,2})),?\s+(\d{4})\s*$", re.IGNORECASE)


def _month(name: str) -> int:
    low = name.lower()
    for full, number in _MONTHS.items():
        if full == low or (len(low) >= 3 and full.startswith(low)):
            return number
    raise ValueError(name)


def parse_locomo_date(text: str) -> datetime:
    """"1:47 pm on 18 May, 2023" -> 2023-05-18T13:47 (parsed without the process locale)."""
    m = _DATE.match(text.replace("\u202f", " "))
    try:
        if m is None:
            raise ValueError(text)
        hour, minute, half = int(m.group(1)), int(m.group(2)), m.group(3).lower()
        day = int(m.group(4) or m.group(7))
        month = _month(m.group(5) or m.group(6))
        if not 1 <= hour <= 12:
            raise ValueError(text)
        hour = hour % 12 + (12 if half == "p" else 0)
        return datetime(int(m.group(8)), month, day, hour, minute)
    except ValueError:
        raise ValueError(f"unrecognised date {text!r} (expected e.g. "
                         "'1:47 pm on 18 May, 2023')") from None


class _Turn(TypedDict, total=False):
    """A turn of a session, as ``_episode`` has checked it."""

    speaker: Required[str]
    text: Required[str]
    # Unchecked, as the file gives them: the dialogue id ("D<session>:<turn>", what the QA
    # evidence names) and a shared photo, in words.
    dia_id: object
    blip_caption: object


def _turn_text(turn: _Turn) -> str:
    text = str(turn.get("text", "")).strip()
    caption = turn.get("blip_caption")
    if caption:
        text = f"{text} [shares a photo: {caption}]".strip()
    return f"{turn.get('speaker', '?')}: {text}"


@dataclass
class _EvidenceMap:
    """Where a sample's dialogue ids landed: turn id -> episode, session number -> episode."""

    by_dialogue: dict[str, str] = field(default_factory=dict)
    by_session: dict[int, str] = field(default_factory=dict)

    def refs(self, evidence: list[Any]) -> tuple[list[str], list[str]]:
        """The episodes the evidence names, in order and once each, and the ids not found."""
        refs: list[str] = []
        missing: list[str] = []
        for ev in evidence:
            # Some items pack several ids into one string ("D8:6; D9:17").
            ids = _DIA.findall(str(ev))
            if not ids:
                missing.append(str(ev))
            for s_no, t_no in ids:
                dia = f"D{s_no}:{t_no}"
                # Ids with leading zeros ("D30:05") miss the turn map: fall back to the
                # session, which is what the ref names anyway.
                found = self.by_dialogue.get(dia) or self.by_session.get(int(s_no))
                if found is None:
                    missing.append(dia)
                elif found not in refs:
                    refs.append(found)
        return refs, missing


def import_locomo(path: Path, prefix: str = "locomo") -> DatasetJson:
    data = read_source(path)
    loc = Locator(path)
    if not isinstance(data, list):
        raise loc.error((), "expected a JSON list of LoCoMo samples")
    scopes: list[ScopeJson] = []
    questions: list[QuestionJson] = []
    unresolved = 0
    for si, sample in enumerate(data):
        scope, qs, missing = _sample(loc, sample, si, prefix)
        scopes.append(scope)
        questions += qs
        unresolved += missing
    return {"version": "0.1.0", "dataset_id": path.stem, "scopes": scopes,
            "questions": questions,
            "meta": {"source": {"format": "locomo", "file": path.name,
                                "unresolved_evidence": unresolved}}}


def _sample(loc: Locator, sample: Any, si: int, prefix: str
            ) -> tuple[ScopeJson, list[QuestionJson], int]:
    """One sample: its scope, its questions and how many evidence ids did not resolve."""
    conv = loc.field(sample, "conversation", dict, (si,))
    qa = loc.field(sample, "qa", list, (si,))
    sample_id = str(sample.get("sample_id", si))
    scope_id = f"{prefix}_{sample_id}"
    evidence = _EvidenceMap()
    episodes = [ep for n, key in _sessions(conv)
                if (ep := _episode(loc, conv, si, n, key, scope_id, evidence)) is not None]
    if not episodes:
        raise loc.error((si, "conversation"), "no non-empty session_N found")
    scope: ScopeJson = {"scope_id": scope_id, "episodes": episodes,
             "meta": {"source": "locomo", "sample_id": sample_id,
                      "speakers": [conv.get("speaker_a"), conv.get("speaker_b")]}}
    questions = []
    unresolved = 0
    for qi, item in enumerate(qa):
        question, missing = _question(loc, item, (si, "qa", qi), f"{scope_id}_q{qi + 1:03d}",
                                      scope_id, len(episodes), evidence)
        questions.append(question)
        unresolved += missing
    return scope, questions, unresolved


def _sessions(conv: dict[str, Any]) -> list[tuple[int, str]]:
    """The conversation's ``session_N`` keys, by session number."""
    return sorted((int(m.group(1)), key) for key in conv if (m := _SESSION.match(key)))


def _episode(loc: Locator, conv: dict[str, Any], si: int, n: int, key: str, scope_id: str,
             evidence: _EvidenceMap) -> EpisodeJson | None:
    """Session ``n`` as an episode (None when it has no turns), its dialogue ids recorded."""
    turns = loc.field(conv, key, list, (si, "conversation"))
    if not turns:
        return None
    date_key = f"{key}_date_time"
    date_text = loc.field(conv, date_key, str, (si, "conversation"))
    try:
        ts = parse_locomo_date(date_text)
    except ValueError as exc:
        raise loc.error((si, "conversation", date_key), str(exc)) from None
    eid = f"{scope_id}_s{n:02d}"
    lines = [f"Conversation session {n}, {date_text}."]
    for ti, turn in enumerate(turns):
        if not isinstance(turn, dict) or "text" not in turn or "speaker" not in turn:
            raise loc.error((si, "conversation", key, ti), "a turn needs 'speaker' and 'text'")
        for name in ("text", "speaker"):
            loc.field(turn, name, str, (si, "conversation", key, ti))
        dia = turn.get("dia_id")
        if isinstance(dia, str):
            evidence.by_dialogue[dia] = eid
        lines.append(_turn_text(cast(_Turn, turn)))  # speaker and text checked above
    evidence.by_session[n] = eid
    return {"episode_id": eid, "scope_id": scope_id,
            "timestamp": ts.strftime("%Y-%m-%dT%H:%M:%S"), "text": "\n".join(lines),
            "meta": {"session": n, "turns": len(turns)}}


class _QuestionMeta(TypedDict, total=False):
    source: Required[str]
    category: Required[int]
    category_name: Required[str]
    evidence: Required[list[Any]]  # the item's dialogue ids, as the file gives them
    unresolved_evidence: list[str]
    adversarial_answer: str  # category 5: the answer planted in the question


def _question(loc: Locator, item: Any, qloc: tuple[int | str, ...], question_id: str,
              scope_id: str, checkpoint: int, evidence_map: _EvidenceMap
              ) -> tuple[QuestionJson, int]:
    """One QA item as a question asked after the last session, and its unresolved ids."""
    prompt = loc.field(item, "question", str, qloc)
    category = loc.field(item, "category", int, qloc)
    if category not in CATEGORIES:
        raise loc.error((*qloc, "category"), f"unknown category {category} "
                        f"(LoCoMo uses {sorted(CATEGORIES)})")
    name, qtype = CATEGORIES[category]
    evidence = item.get("evidence", [])
    if not isinstance(evidence, list):
        raise loc.error((*qloc, "evidence"), "expected a list of dialogue ids")
    refs, missing = evidence_map.refs(evidence)
    meta: _QuestionMeta = {"source": "locomo", "category": category, "category_name": name,
                           "evidence": evidence}
    if missing:
        meta["unresolved_evidence"] = missing
    answer, facts, conclusion = _answer(loc, item, qloc, category, meta)
    truth: GroundTruthJson = {"canonical_answer": answer, "required_evidence_refs": refs,
                              "key_facts": facts}
    if conclusion is not None:
        truth["conclusion"] = conclusion
    return {
        "question_id": question_id,
        "scope_id": scope_id,
        "checkpoint_after": checkpoint,
        "question_type": qtype.value,
        "prompt": prompt,
        "ground_truth": truth,
        "meta": meta,
    }, len(missing)


def _answer(loc: Locator, item: Any, qloc: tuple[int | str, ...], category: int,
            meta: _QuestionMeta) -> tuple[str, list[str], str | None]:
    """The canonical answer, key facts and conclusion (a yes/no answer's verdict); an
    adversarial item's answer is that the conversation does not say (its planted answer is
    kept in ``meta``)."""
    if category == 5:
        if "adversarial_answer" in item:
            meta["adversarial_answer"] = answer_text(item["adversarial_answer"])
        return NOT_MENTIONED, [], None
    if "answer" not in item:
        raise loc.error((*qloc, "answer"), "required field is missing")
    answer = answer_text(item["answer"])
    return answer, *answer_truth(answer)
