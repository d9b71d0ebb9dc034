"""Import LoCoMo (``locomo10.json``) into the LENS format.

Each sample (one long conversation between two speakers) becomes a scope; each session becomes
one episode, time-stamped from its ``session_N_date_time`` line; every QA item becomes a question
asked after the last session. Evidence dialogue ids (``D3:12``) are mapped to the episodes that
hold them, and the original category, evidence and adversarial answer are kept in the question's
``meta``.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

from lens.dataset import QuestionType
from lens.importers.common import Locator, answer_text, read_source, short_facts

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


def _turn_text(turn: dict[str, Any]) -> str:
    text = str(turn.get("text", "")).strip()
    caption = turn.get("blip_caption")
    if caption:
        text = f"{text} [shares a photo: {caption}]".strip()
    return f"{turn.get('speaker', '?')}: {text}"


def import_locomo(path: Path, prefix: str = "locomo") -> dict[str, Any]:
    data = read_source(path)
    loc = Locator(path)
    if not isinstance(data, list):
        raise loc.error((), "expected a JSON list of LoCoMo samples")
    scopes: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    unresolved = 0
    for si, sample in enumerate(data):
        conv = loc.field(sample, "conversation", dict, (si,))
        qa = loc.field(sample, "qa", list, (si,))
        sample_id = str(sample.get("sample_id", si))
        scope_id = f"{prefix}_{sample_id}"
        sessions: list[tuple[int, str]] = []
        for key in conv:
            m = _SESSION.match(key)
            if m:
                sessions.append((int(m.group(1)), key))
        sessions.sort()
        episodes: list[dict[str, Any]] = []
        dia_to_ep: dict[str, str] = {}
        session_to_ep: dict[int, str] = {}
        for n, key in sessions:
            turns = loc.field(conv, key, list, (si, "conversation"))
            if not turns:
                continue
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
                    raise loc.error((si, "conversation", key, ti),
                                    "a turn needs 'speaker' and 'text'")
                dia = turn.get("dia_id")
                if isinstance(dia, str):
                    dia_to_ep[dia] = eid
                lines.append(_turn_text(turn))
            session_to_ep[n] = eid
            episodes.append({"episode_id": eid, "scope_id": scope_id,
                             "timestamp": ts.strftime("%Y-%m-%dT%H:%M:%S"),
                             "text": "\n".join(lines),
                             "meta": {"session": n, "turns": len(turns)}})
        if not episodes:
            raise loc.error((si, "conversation"), "no non-empty session_N found")
        scopes.append({"scope_id": scope_id, "episodes": episodes,
                       "meta": {"source": "locomo", "sample_id": sample_id,
                                "speakers": [conv.get("speaker_a"), conv.get("speaker_b")]}})
        for qi, item in enumerate(qa):
            qloc = (si, "qa", qi)
            prompt = loc.field(item, "question", str, qloc)
            category = loc.field(item, "category", int, qloc)
            if category not in CATEGORIES:
                raise loc.error((*qloc, "category"), f"unknown category {category} "
                                f"(LoCoMo uses {sorted(CATEGORIES)})")
            name, qtype = CATEGORIES[category]
            evidence = item.get("evidence", [])
            if not isinstance(evidence, list):
                raise loc.error((*qloc, "evidence"), "expected a list of dialogue ids")
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
                    found = dia_to_ep.get(dia) or session_to_ep.get(int(s_no))
                    if found is None:
                        missing.append(dia)
                    elif found not in refs:
                        refs.append(found)
            unresolved += len(missing)
            meta: dict[str, Any] = {"source": "locomo", "category": category,
                                    "category_name": name, "evidence": evidence}
            if missing:
                meta["unresolved_evidence"] = missing
            if category == 5:
                answer = NOT_MENTIONED
                facts: list[str] = []
                if "adversarial_answer" in item:
                    meta["adversarial_answer"] = answer_text(item["adversarial_answer"])
            else:
                if "answer" not in item:
                    raise loc.error((*qloc, "answer"), "required field is missing")
                answer = answer_text(item["answer"])
                facts = short_facts(answer)
            questions.append({
                "question_id": f"{scope_id}_q{qi + 1:03d}",
                "scope_id": scope_id,
                "checkpoint_after": len(episodes),
                "question_type": qtype.value,
                "prompt": prompt,
                "ground_truth": {"canonical_answer": answer, "required_evidence_refs": refs,
                                 "key_facts": facts},
                "meta": meta,
            })
    return {"version": "0.1.0", "dataset_id": path.stem, "scopes": scopes,
            "questions": questions,
            "meta": {"source": {"format": "locomo", "file": path.name,
                                "unresolved_evidence": unresolved}}}
