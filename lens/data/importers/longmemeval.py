"""Import LongMemEval (``longmemeval_s.json`` / ``_m`` / ``_oracle``) into the LENS format.

Each item becomes a scope whose episodes are its haystack sessions (time-stamped from
``haystack_dates``) and whose one question is asked after the whole haystack, at
``question_date`` (the question's ``asked_at``, told to the agent): the official generation
gives the reader every session, sorted by date, whatever the question's date. In the released
files some items have sessions (their evidence among them) dated after ``question_date``; those
questions carry ``allow_later_episodes`` and are counted, never refused. The answer sessions
are the required evidence; the original question type, the abstention flag and the turns
marked ``has_answer`` are kept in ``meta``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, Required, TypedDict

from lens.core.errors import DatasetError
from lens.data.dataset import QuestionType
from lens.data.dataset_check import validate_raw
from lens.data.importers.common import Locator, answer_text, answer_truth, stream_items
from lens.data.importers.records import (
    DatasetJson,
    EpisodeJson,
    GroundTruthJson,
    QuestionJson,
    ScopeJson,
)

QUESTION_TYPES: dict[str, QuestionType] = {
    "single-session-user": QuestionType.NULL_HYPOTHESIS,
    "single-session-assistant": QuestionType.NULL_HYPOTHESIS,
    "single-session-preference": QuestionType.ACTION_RECOMMENDATION,
    "multi-session": QuestionType.LONGITUDINAL,
    "temporal-reasoning": QuestionType.TEMPORAL,
    "knowledge-update": QuestionType.DISTRACTOR_RESISTANCE,
}
_DATE = re.compile(r"^\s*(\d{4})[/-](\d{1,2})[/-](\d{1,2})(?:\s*\([A-Za-z]+\))?"
                   r"(?:\s+(\d{1,2}):(\d{2}))?\s*$")


def parse_lme_date(text: str) -> datetime:
    """"2023/05/20 (Sat) 02:21" -> 2023-05-20T02:21 (the weekday is ignored)."""
    m = _DATE.match(text)
    try:
        if m is None:
            raise ValueError(text)
        return datetime(int(m.group(1)), int(m.group(2)), int(m.group(3)),
                        int(m.group(4) or 0), int(m.group(5) or 0))
    except ValueError:
        raise ValueError(f"unrecognised date {text!r} (expected e.g. "
                         "'2023/05/20 (Sat) 02:21')") from None


class _SessionMeta(TypedDict, total=False):
    session_id: Required[str]
    answer_turns: list[int]  # the turns marked has_answer


class _QuestionMeta(TypedDict, total=False):
    source: Required[str]
    question_type: Required[str]
    abstention: Required[bool]
    question_date: Required[str]
    answer_session_ids: Required[list[str]]
    unresolved_evidence: list[str]


def _convert(ii: int, item: Any, loc: Locator, prefix: str
             ) -> tuple[ScopeJson, QuestionJson]:
    """One LongMemEval item as (scope, question)."""
    qid = str(loc.field(item, "question_id", (str, int), (ii,)))
    qtype_name = loc.field(item, "question_type", str, (ii,))
    prompt = loc.field(item, "question", str, (ii,))
    if "answer" not in item:
        raise loc.error((ii, "answer"), "required field is missing")
    date_text = loc.field(item, "question_date", str, (ii,))
    session_ids = loc.field(item, "haystack_session_ids", list, (ii,))
    dates = loc.field(item, "haystack_dates", list, (ii,))
    sessions = loc.field(item, "haystack_sessions", list, (ii,))
    answer_ids = item.get("answer_session_ids", [])
    if not isinstance(answer_ids, list):
        raise loc.error((ii, "answer_session_ids"), "expected a list of session ids")
    if not len(session_ids) == len(dates) == len(sessions):
        raise loc.error((ii,), f"haystack_session_ids ({len(session_ids)}), haystack_dates "
                        f"({len(dates)}) and haystack_sessions ({len(sessions)}) differ "
                        "in length")
    if qtype_name not in QUESTION_TYPES:
        raise loc.error((ii, "question_type"), f"unknown question_type {qtype_name!r}; "
                        f"known: {sorted(QUESTION_TYPES)}")
    try:
        asked_at = parse_lme_date(date_text)
    except ValueError as exc:
        raise loc.error((ii, "question_date"), str(exc)) from None
    scope_id = f"{prefix}_{qid}"
    episodes, by_session = _haystack(loc, ii, scope_id, session_ids, dates, sessions)
    asked = asked_at.strftime("%Y-%m-%dT%H:%M:%S")
    abstention = "_abs" in qid
    qtype = QuestionType.EVIDENCE_SUFFICIENCY if abstention else QUESTION_TYPES[qtype_name]
    scope: ScopeJson = {"scope_id": scope_id, "episodes": episodes,
             "meta": {"source": "longmemeval", "question_id": qid}}
    refs, missing = _evidence(answer_ids, by_session)
    question: QuestionJson = {
        "question_id": qid if not qid.isdigit() else f"{prefix}_{qid}",
        "scope_id": scope_id,
        "checkpoint_after": len(episodes),
        "question_type": qtype.value,
        "prompt": prompt,
        "ground_truth": _truth(answer_text(item["answer"]), refs, abstention),
        "meta": _question_meta(qtype_name, abstention, date_text, answer_ids, missing),
        "asked_at": asked,
    }
    if any(e["timestamp"] > asked for e in episodes):
        question["allow_later_episodes"] = True
    return scope, question


def _haystack(loc: Locator, ii: int, scope_id: str, session_ids: list[Any], dates: list[Any],
              sessions: list[Any]) -> tuple[list[EpisodeJson], dict[str, str]]:
    """Item ``ii``'s sessions as episodes, and the episode id of each session id (its first)."""
    episodes: list[EpisodeJson] = []
    by_session: dict[str, str] = {}
    for k, (sid, dt, turns) in enumerate(zip(session_ids, dates, sessions, strict=True)):
        episode = _session_episode(loc, (ii, k), f"{scope_id}_{k + 1:03d}", scope_id, sid, dt,
                                   turns)
        by_session.setdefault(str(sid), episode["episode_id"])
        episodes.append(episode)
    if not episodes:
        raise loc.error((ii, "haystack_sessions"), "an item needs at least one session")
    return episodes, by_session


def _session_episode(loc: Locator, at: tuple[int, int], eid: str, scope_id: str, sid: Any,
                     dt: Any, turns: Any) -> EpisodeJson:
    """One session (number ``at[1]`` of item ``at[0]``) as an episode: a line a turn, the turns
    marked ``has_answer`` in its meta."""
    ii, k = at
    if not isinstance(dt, str):
        raise loc.error((ii, "haystack_dates", k), "expected a date string")
    try:
        ts = parse_lme_date(dt)
    except ValueError as exc:
        raise loc.error((ii, "haystack_dates", k), str(exc)) from None
    if not isinstance(turns, list):
        raise loc.error((ii, "haystack_sessions", k), "expected a list of turns")
    lines = [f"Chat session of {dt}."]
    answer_turns = []
    for t, turn in enumerate(turns):
        if not isinstance(turn, dict) or not isinstance(turn.get("content"), str):
            raise loc.error((ii, "haystack_sessions", k, t),
                            "a turn needs 'role' and a string 'content'")
        lines.append(f"{turn.get('role', '?')}: {turn['content']}")
        if turn.get("has_answer"):
            answer_turns.append(t)
    meta: _SessionMeta = {"session_id": str(sid)}
    if answer_turns:
        meta["answer_turns"] = answer_turns
    return {"episode_id": eid, "scope_id": scope_id,
            "timestamp": ts.strftime("%Y-%m-%dT%H:%M:%S"), "text": "\n".join(lines),
            "meta": meta}


def _evidence(answer_ids: list[Any], by_session: dict[str, str]) -> tuple[list[str], list[str]]:
    """The episodes of the answer sessions, and the answer session ids no session has."""
    refs = [by_session[str(a)] for a in answer_ids if str(a) in by_session]
    missing = [str(a) for a in answer_ids if str(a) not in by_session]
    return refs, missing


def _question_meta(qtype_name: str, abstention: bool, date_text: str, answer_ids: list[Any],
                   missing: list[str]) -> _QuestionMeta:
    qmeta: _QuestionMeta = {"source": "longmemeval", "question_type": qtype_name,
                            "abstention": abstention, "question_date": date_text,
                            "answer_session_ids": [str(a) for a in answer_ids]}
    if missing:
        qmeta["unresolved_evidence"] = missing
    return qmeta


def _truth(answer: str, refs: list[str], abstention: bool) -> GroundTruthJson:
    """The ground truth of an answer: its key facts and conclusion, none for an abstention."""
    facts, conclusion = ([], None) if abstention else answer_truth(answer)
    truth: GroundTruthJson = {"canonical_answer": answer, "required_evidence_refs": refs,
                              "key_facts": facts}
    if conclusion is not None:
        truth["conclusion"] = conclusion
    return truth


def evidence_is_late(question: QuestionJson, scope: ScopeJson) -> bool:
    """Whether an imported question's evidence holds a session dated after its question date."""
    times = {e["episode_id"]: e["timestamp"] for e in scope["episodes"]}
    return any(times[r] > question["asked_at"] for r in
               question["ground_truth"]["required_evidence_refs"])


def iter_longmemeval(path: Path, prefix: str = "lme"
                     ) -> Iterator[tuple[ScopeJson, QuestionJson]]:
    """(scope, question) per item, parsing the file one item at a time: a multi-gigabyte
    ``_m`` file never sits in memory whole."""
    loc = Locator(path)
    for ii, item in stream_items(path, "a JSON list of LongMemEval items"):
        yield _convert(ii, item, loc, prefix)


def import_longmemeval(path: Path, prefix: str = "lme") -> DatasetJson:
    scopes: list[ScopeJson] = []
    questions: list[QuestionJson] = []
    late = 0
    for scope, question in iter_longmemeval(path, prefix):
        scopes.append(scope)
        questions.append(question)
        late += evidence_is_late(question, scope)
    return {"version": "0.1.0", "dataset_id": path.stem, "scopes": scopes,
            "questions": questions, "meta": source_meta(path, late)}


def source_meta(path: Path, evidence_after_question: int) -> dict[str, dict[str, str | int]]:
    return {"source": {"format": "longmemeval", "file": path.name,
                       "evidence_after_question": evidence_after_question}}


def write_longmemeval(path: Path, out: Path, prefix: str = "lme") -> dict[str, int]:
    """Import straight into the LENS file ``out``, one item at a time: each scope is checked
    and written as soon as it is read, so memory holds one item and the (small) questions,
    never the dataset. Written to ``out``'s temporary sibling and moved into place only once
    complete. Returns counts of scopes, episodes, questions and the questions whose evidence
    is dated after their question date."""
    questions: list[QuestionJson] = []
    seen: set[str] = set()
    episodes = 0
    late = 0
    tmp = out.with_name(out.name + ".tmp")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            fh.write('{\n "version": "0.1.0",\n "dataset_id": ' + json.dumps(path.stem)
                     + ',\n "scopes": [\n')
            for n, (scope, question) in enumerate(iter_longmemeval(path, prefix)):
                if scope["scope_id"] in seen:
                    raise DatasetError(f"{path}: $[{n}].question_id: {question['question_id']!r}"
                                       " appears twice; question ids must be unique")
                seen.add(scope["scope_id"])
                _, problems = validate_raw({"scopes": [scope], "questions": [question]},
                                           f"{path} item {n}")
                if problems:
                    raise DatasetError(f"{path}: $[{n}]: the imported item is not valid LENS",
                                       problems[:20])
                fh.write((",\n" if n else "") + json.dumps(scope, ensure_ascii=False))
                episodes += len(scope["episodes"])
                late += evidence_is_late(question, scope)
                questions.append(question)
            fh.write('\n ],\n "questions": [\n')
            fh.write(",\n".join(json.dumps(q, ensure_ascii=False) for q in questions))
            fh.write('\n ],\n "meta": ' + json.dumps(source_meta(path, late)) + "\n}\n")
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
    return {"scopes": len(seen), "episodes": episodes, "questions": len(questions),
            "evidence_after_question": late}
