"""Import BEAM ("Beyond a Million Tokens", Tavakoli et al., 2025) into the LENS format.

BEAM is released as one folder per conversation, grouped by size tier (``chats/100K``,
``500K``, ``1M``, ``10M``; the 100K tier is the paper's 128K): ``chat.json`` (the conversation),
for some conversations ``chat_trunecated.json`` (sic: the conversation cut to its tier's length,
which the official answer generation reads wherever it exists, so lens does too) and
``probing_questions/probing_questions.json`` (twenty questions, two per memory ability, each
with a rubric). ``chat.json`` is a list of batches ``{batch_number, time_anchor, turns: [[message,
...], ...]}``; the 10M tier wraps them in plans, ``[{"plan-1": [batch, ...]}, ...]``; the
Hugging Face ``chat`` column holds each batch as a flat list of messages. Every message has
``role``, ``content`` and a running ``id``; the first user message of a batch carries its
``time_anchor`` ("March-15-2024").

Each conversation becomes a scope; each turn (a user message and the replies up to the next main
question) one episode, time-stamped from its batch's anchor; every probing question is asked after
the last turn. The official answer generation ignores the anchors and gives the model the messages
in file order, so the file order is kept; an anchor that would break it (earlier than the turn
before, or later than the next batch's anchor) labels only its batch, whose turns follow the turn
before by a minute each. ``source_chat_ids`` (message ids) become the refs of the turns holding
them. The chat is parsed one batch at a time and written out turn by turn: a 10M conversation
is never held whole.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Required, TypedDict

import ijson

from lens.core.errors import DatasetError
from lens.core.jsonguard import MAX_JSON_DEPTH, JsonRefused, JsonTooDeep, loads_guarded
from lens.data.dataset import QuestionType
from lens.data.importers.common import Locator, TooDeep, answer_text, guarded_events, short_facts
from lens.data.importers.records import QuestionJson
from lens.data.importers.writer import StreamingDatasetWriter

ABILITIES: dict[str, QuestionType] = {
    "abstention": QuestionType.EVIDENCE_SUFFICIENCY,
    "contradiction_resolution": QuestionType.NEGATIVE,
    "event_ordering": QuestionType.LONGITUDINAL,
    "information_extraction": QuestionType.NULL_HYPOTHESIS,
    "instruction_following": QuestionType.ACTION_RECOMMENDATION,
    "knowledge_update": QuestionType.DISTRACTOR_RESISTANCE,
    "multi_session_reasoning": QuestionType.LONGITUDINAL,
    "preference_following": QuestionType.ACTION_RECOMMENDATION,
    "summarization": QuestionType.LONGITUDINAL,
    "temporal_reasoning": QuestionType.TEMPORAL,
}
# Where each ability keeps its reference answer, in the order looked for.
ANSWER_FIELDS = ("answer", "ideal_answer", "ideal_response", "ideal_summary",
                 "expected_compliance")
TIERS = ("100K", "128K", "500K", "1M", "10M")
_PLAN_FOLDER = re.compile(r"plan-\d+")
_PLAN_GLOB = "plan-*"
CHAT_FILE = "chat.json"
TRUNCATED_CHAT_FILE = "chat_trunecated.json"
QUESTIONS_FILE = Path("probing_questions") / "probing_questions.json"
_PLAN = re.compile(r"^item\.([^.]+)\.item$")
_ANCHOR = re.compile(r"^\s*([A-Za-z]+)[-\s]+(\d{1,2}),?[-\s]+(\d{4})\s*$")
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
           "september", "october", "november", "december")
# Without any anchor a conversation starts here (the stream order is what matters).
_EPOCH = datetime(2024, 1, 1)


def parse_anchor(text: str) -> datetime:
    """"March-15-2024" -> 2024-03-15 (parsed without the process locale)."""
    m = _ANCHOR.match(text)
    month = m.group(1).lower() if m else ""
    hits = [i for i, name in enumerate(_MONTHS) if len(month) >= 3 and name.startswith(month)]
    try:
        if m is None or len(hits) != 1:
            raise ValueError(text)
        return datetime(int(m.group(3)), hits[0] + 1, int(m.group(2)))
    except ValueError:
        raise ValueError(f"unrecognised time_anchor {text!r} (expected e.g. "
                         "'March-15-2024')") from None


@dataclass
class Conversation:
    tier: str
    conv_id: str
    folder: Path

    @property
    def scope_id(self) -> str:
        return f"beam_{self.tier}_{self.conv_id}"

    @property
    def chat(self) -> Path:
        """The chat the official answer generation reads: the truncated one where it exists."""
        truncated = self.folder / TRUNCATED_CHAT_FILE
        return truncated if truncated.is_file() else self.folder / CHAT_FILE


def find_conversations(src: Path) -> list[Conversation]:
    """The conversations under ``src``: one conversation folder, a tier folder of them, or the
    ``chats`` folder of tiers."""
    if not src.exists():
        raise DatasetError(f"{src}: not found")
    if not src.is_dir():
        raise DatasetError(f"{src}: expected a BEAM folder (a conversation folder with "
                           f"{CHAT_FILE}, a tier folder such as chats/1M, or chats/)")
    if (src / CHAT_FILE).is_file():
        return [Conversation(src.parent.name, src.name, src)]
    convs = _tier(src)
    if convs:
        return convs
    tiers = sorted((d for d in src.iterdir() if d.is_dir()),
                   key=lambda d: (TIERS.index(d.name) if d.name in TIERS else len(TIERS), d.name))
    out = [c for d in tiers for c in _tier(d)]
    if not out:
        plans = sorted(str(d.relative_to(src)) for d in src.glob(f"*/{_PLAN_GLOB}")
                       if (d / CHAT_FILE).is_file())
        hint = (f"; {len(plans)} plan folder(s) hold a {CHAT_FILE} ({plans[0]}, ...), but a 10M "
                f"conversation is read from its own <id>/{CHAT_FILE}, the plans in order"
                if plans else "")
        raise DatasetError(f"{src}: no BEAM conversation found (expected <id>/{CHAT_FILE} and "
                           f"<id>/{QUESTIONS_FILE.as_posix()}, under a tier folder or here)"
                           f"{hint}")
    return out


def _tier(folder: Path) -> list[Conversation]:
    # A 10M conversation's plan-N folders hold the plans' own chat files: never conversations.
    subs = [d for d in folder.iterdir() if d.is_dir() and (d / CHAT_FILE).is_file()
            and not _PLAN_FOLDER.fullmatch(d.name)]
    subs.sort(key=lambda d: (0, int(d.name), "") if d.name.isdigit() else (1, 0, d.name))
    return [Conversation(folder.name, d.name, d) for d in subs]


def iter_batches(path: Path) -> Iterator[tuple[str | None, int, Any]]:
    """(plan key or None, batch index within its plan, batch) for each batch of ``chat.json``,
    parsed one batch at a time."""
    if not path.is_file():
        raise DatasetError(f"{path}: file not found")
    counters: dict[str | None, int] = {}
    with path.open("rb") as fh:
        events = guarded_events(fh)
        try:
            first = next(events, None)
            if first is None or first[1] != "start_array":
                raise DatasetError(f"{path}: $: expected a JSON list of batches (or of plans)")
            top = -1
            for prefix, event, value in events:
                plan: str | None = None
                pending: list[tuple[str, Any]] = [(event, value)]
                if prefix == "item" and event not in ("end_map", "end_array", "map_key"):
                    top += 1
                    if event not in ("start_map", "start_array"):
                        raise DatasetError(f"{path}: $[{top}]: expected a batch (an object, or a "
                                           f"list of messages) or a plan, got {value!r}")
                if prefix == "item" and event == "start_map":
                    # A batch object, or a 10M plan wrapper whose batches come next.
                    key_event = next(events)
                    if key_event[1] == "map_key" and str(key_event[2]).startswith("plan"):
                        continue
                    pending.append((key_event[1], key_event[2]))
                elif prefix == "item" and event == "start_array":
                    pass
                elif event in ("start_map", "start_array") and (m := _PLAN.match(prefix)):
                    plan = m.group(1)
                else:
                    continue
                batch = _build(pending, events)
                counters[plan] = counters.get(plan, -1) + 1
                yield plan, counters[plan], batch
        except TooDeep:
            raise DatasetError(f"{path}: JSON nested more than {MAX_JSON_DEPTH} levels deep "
                               "(a BEAM chat is five levels deep); repair the file or download "
                               "it again") from None
        except ijson.JSONError as exc:
            raise DatasetError(f"{path}: invalid JSON: {exc}") from None
        except UnicodeDecodeError as exc:
            raise DatasetError(f"{path}: not UTF-8 text ({exc.reason})") from None


def _build(pending: list[tuple[str, Any]], events: Iterator[tuple[str, str, Any]]) -> Any:
    """The JSON value that starts with ``pending`` events, read from ``events`` to its end."""
    builder = ijson.ObjectBuilder()
    depth = 0
    for ev, val in pending:
        builder.event(ev, val)
        depth += ev in ("start_map", "start_array")
        depth -= ev in ("end_map", "end_array")
    if depth == 0:
        return builder.value
    for _, ev, val in events:
        builder.event(ev, val)
        depth += ev in ("start_map", "start_array")
        depth -= ev in ("end_map", "end_array")
        if depth == 0:
            break
    return builder.value


def _turns(batch: Any, where: str) -> tuple[list[list[Message]], str | None]:
    """A batch's turns and its time anchor. A flat list of messages (the Hugging Face column)
    is cut into turns at each main question."""
    if isinstance(batch, dict):
        turns = batch.get("turns")
        if not isinstance(turns, list):
            raise DatasetError(f"{where}.turns: expected a list of turns (lists of messages)")
        anchor = batch.get("time_anchor")
    elif isinstance(batch, list):
        turns, anchor = [], None
        for msg in batch:
            if (isinstance(msg, dict) and msg.get("question_type") == "main_question"
                    and turns and turns[-1]):
                turns.append([])
            if not turns:
                turns.append([])
            turns[-1].append(msg)
    else:
        raise DatasetError(f"{where}: expected a batch object or a list of messages, got "
                           f"{type(batch).__name__}")
    for ti, turn in enumerate(turns):
        if not isinstance(turn, list):
            raise DatasetError(f"{where}.turns[{ti}]: expected a list of messages")
        for mi, msg in enumerate(turn):
            if (not isinstance(msg, dict) or not isinstance(msg.get("content"), str)
                    or not isinstance(msg.get("role"), str)):
                raise DatasetError(f"{where}.turns[{ti}][{mi}]: a message needs a string 'role' "
                                   "and a string 'content'")
            if anchor is None and isinstance(msg.get("time_anchor"), str):
                anchor = msg["time_anchor"]
    return turns, anchor if isinstance(anchor, str) else None


class Message(TypedDict, total=False):
    """One message of a BEAM chat, as ``_turns`` has checked it."""

    role: Required[str]
    content: Required[str]
    id: int
    time_anchor: str
    question_type: str  # "main_question" opens a turn in a flat list of messages


class _TurnMeta(TypedDict, total=False):
    batch: Required[int]
    turn: Required[int]
    message_ids: Required[list[int]]
    plan: str
    time_anchor: str
    time_anchor_out_of_order: bool


class _QuestionMeta(TypedDict, total=False):
    source: Required[str]
    ability: Required[str]
    tier: Required[str]
    rubric: Required[list[str]]
    answer_field: Required[str]
    source_chat_ids: Required[list[int]]
    beam: Required[dict[str, object]]  # the item's other fields, as the file gives them
    unresolved_evidence: list[int]


@dataclass
class _Stream:
    """What writing a conversation's turns learnt: message id -> episode, the count, and the
    anchors that could not date their batch."""

    by_message: dict[int, str] = field(default_factory=dict)
    episodes: int = 0
    last: datetime | None = None
    anchors_set_aside: int = 0


@dataclass
class _Batch:
    where: str
    plan: str | None
    index: int
    turns: list[list[Message]]
    anchor_text: str | None
    anchor: datetime | None


def _batches(path: Path) -> Iterator[_Batch]:
    for plan, bi, raw in iter_batches(path):
        where = f"{path}: $" + (f".{plan}" if plan else "") + f"[{bi}]"
        turns, anchor_text = _turns(raw, where)
        anchor = None
        if anchor_text is not None:
            try:
                anchor = parse_anchor(anchor_text)
            except ValueError as exc:
                raise DatasetError(f"{where}: {exc}") from None
        yield _Batch(where, plan, bi, turns, anchor_text, anchor)


def _with_next(items: Iterator[_Batch]) -> Iterator[tuple[_Batch, _Batch | None]]:
    prev: _Batch | None = None
    for item in items:
        if prev is not None:
            yield prev, item
        prev = item
    if prev is not None:
        yield prev, None


def _usable(anchor: datetime | None, last: datetime | None, following: datetime | None) -> bool:
    """Whether a batch's anchor can date its turns without moving others: not before the turn
    before it, and not after the next batch's anchor (unless that one is itself out of order,
    earlier than the turn before)."""
    if anchor is None:
        return False
    if last is not None and anchor <= last:
        return False
    return not (following is not None and following < anchor
                and (last is None or following > last))


def _write_chat(conv: Conversation, w: StreamingDatasetWriter) -> _Stream:
    path = conv.chat
    st = _Stream()
    w.begin_scope(conv.scope_id)
    for batch, nxt in _with_next(_batches(path)):
        base = batch.anchor if _usable(batch.anchor, st.last,
                                       nxt.anchor if nxt is not None else None) else None
        if batch.anchor is not None and base is None:
            st.anchors_set_aside += 1
        where = batch.where
        for ti, turn in enumerate(batch.turns):
            if not turn:
                continue
            ts = (base + timedelta(minutes=ti)) if base is not None else None
            # Turns keep the file order: a batch without a usable anchor follows the turn
            # before by a minute.
            if ts is None or (st.last is not None and ts <= st.last):
                ts = (st.last + timedelta(minutes=1)) if st.last is not None else _EPOCH
            st.last = ts
            st.episodes += 1
            eid = f"{conv.scope_id}_t{st.episodes:05d}"
            ids = [m["id"] for m in turn if isinstance(m.get("id"), int)]
            for mid in ids:
                st.by_message.setdefault(mid, eid)
            meta: _TurnMeta = {"batch": batch.index + 1, "turn": ti + 1, "message_ids": ids}
            if batch.plan:
                meta["plan"] = batch.plan
            if batch.anchor_text:
                meta["time_anchor"] = batch.anchor_text
                if base is None:
                    meta["time_anchor_out_of_order"] = True
            w.episode({"episode_id": eid, "scope_id": conv.scope_id,
                       "timestamp": ts.strftime("%Y-%m-%dT%H:%M:%S"),
                       "text": "\n".join(f"{m['role']}: {m['content']}" for m in turn),
                       "meta": meta}, f"{where}.turns[{ti}]")
    if not st.episodes:
        raise DatasetError(f"{path}: $: the conversation has no messages")
    w.end_scope({"source": "beam", "tier": conv.tier, "conversation_id": conv.conv_id,
                 "chat_file": path.name})
    return st


def _chat_ids(value: Any) -> list[int]:
    """Message ids of ``source_chat_ids``: a list, a dict of lists (first/second statement,
    original/updated info), or absent."""
    if isinstance(value, dict):
        return [i for v in value.values() for i in _chat_ids(v)]
    if isinstance(value, list):
        return [i for v in value for i in _chat_ids(v)]
    return [value] if isinstance(value, int) and not isinstance(value, bool) else []


def _questions(conv: Conversation, st: _Stream) -> Iterator[tuple[QuestionJson, str]]:
    path = conv.folder / QUESTIONS_FILE
    if not path.is_file():
        raise DatasetError(f"{path}: file not found (each BEAM conversation folder needs "
                           f"{QUESTIONS_FILE.as_posix()})")
    try:
        data = loads_guarded(path.read_bytes(), what=str(path))
    except JsonTooDeep:
        raise DatasetError(f"{path}: JSON nested too deeply to be BEAM probing questions; "
                           "repair the file or download it again") from None
    except JsonRefused as exc:
        if isinstance(exc.cause, (UnicodeDecodeError, json.JSONDecodeError)):
            raise DatasetError(f"{path}: not valid UTF-8 JSON ({exc.cause})") from None
        raise DatasetError(f"{path}: {exc.reason}") from None
    loc = Locator(path)
    if not isinstance(data, dict):
        raise loc.error((), "expected an object of abilities, each a list of questions")
    for ability, items in data.items():
        if ability not in ABILITIES:
            raise loc.error((ability,), f"unknown ability {ability!r}; known: "
                            f"{', '.join(ABILITIES)}")
        if not isinstance(items, list):
            raise loc.error((ability,), "expected a list of questions")
        for qi, item in enumerate(items):
            yield _question(loc, conv, st, ability, qi, item), f"{path}: $.{ability}[{qi}]"


def _question(loc: Locator, conv: Conversation, st: _Stream, ability: str, qi: int,
              item: Any) -> QuestionJson:
    qloc: tuple[int | str, ...] = (ability, qi)
    prompt = loc.field(item, "question", str, qloc)
    rubric = loc.field(item, "rubric", list, qloc)
    if not rubric or not all(isinstance(r, str) and r.strip() for r in rubric):
        raise loc.error((*qloc, "rubric"), "expected a non-empty list of rubric items (strings)")
    key = next((k for k in ANSWER_FIELDS if k in item), None)
    if key is None:
        raise loc.error(qloc, f"no reference answer: expected one of {', '.join(ANSWER_FIELDS)}")
    answer = answer_text(item[key])
    ids = _chat_ids(item.get("source_chat_ids"))
    refs = list(dict.fromkeys(st.by_message[i] for i in ids if i in st.by_message))
    meta: _QuestionMeta = {"source": "beam", "ability": ability, "tier": conv.tier,
                            "rubric": list(rubric), "answer_field": key,
                            "source_chat_ids": ids,
                            "beam": {k: v for k, v in item.items()
                                     if k not in ("question", "rubric", key)}}
    missing = [i for i in ids if i not in st.by_message]
    if missing:
        meta["unresolved_evidence"] = missing
    return {
        "question_id": f"{conv.scope_id}_{ability}_{qi + 1}",
        "scope_id": conv.scope_id,
        "checkpoint_after": st.episodes,
        "question_type": ABILITIES[ability].value,
        "prompt": prompt,
        "ground_truth": {"canonical_answer": answer, "required_evidence_refs": refs,
                         "key_facts": [] if ability == "abstention" else short_facts(answer)},
        "meta": meta,
    }


def write_beam(src: Path, out: Path) -> dict[str, Any]:
    """Import every conversation under ``src`` straight into the LENS file ``out``."""
    convs = find_conversations(src)
    tiers = list(dict.fromkeys(c.tier for c in convs))
    dataset_id = "beam-" + "-".join(tiers) if len(tiers) <= 2 else "beam"
    unresolved = 0
    set_aside = 0
    truncated = [c.scope_id for c in convs if c.chat.name == TRUNCATED_CHAT_FILE]
    with StreamingDatasetWriter(out, dataset_id) as w:
        for conv in convs:
            st = _write_chat(conv, w)
            set_aside += st.anchors_set_aside
            for q, where in _questions(conv, st):
                w.question(q, where)
                missing = q["meta"].get("unresolved_evidence", [])
                unresolved += len(missing) if isinstance(missing, list) else 0
        counts: dict[str, Any] = w.finish({"source": {
            "format": "beam", "path": src.name, "conversations": len(convs), "tiers": tiers,
            "truncated_chats": truncated, "time_anchors_out_of_order": set_aside,
            "unresolved_evidence": unresolved}})
    counts["unresolved_evidence"] = unresolved
    notes = []
    if truncated:
        notes.append(f"{len(truncated)} of {len(convs)} conversation(s) read from "
                     f"{TRUNCATED_CHAT_FILE}, as the official answer generation does: "
                     + ", ".join(truncated))
    if set_aside:
        notes.append(f"{set_aside} batch time anchor(s) out of order date only their own batch; "
                     "its turns follow the turn before (meta.time_anchor_out_of_order)")
    if unresolved:
        notes.append(f"{unresolved} evidence id(s) matched no turn (kept in question meta)")
    counts["notes"] = notes
    return counts
