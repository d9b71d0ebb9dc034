"""GoldEvidenceBench as a lens scenario: rows become a lens Dataset, lens records become
predictions.

Each episode (and each twin) is one scope. Its log lines stream into the memory adapter as lens
episodes, one per line (or one per step), with timestamps from ``step``; every row becomes a
question asked at the checkpoint of its ``as_of_step``. Gold (value, support ids, row meta) is kept
in the question's ground truth and meta only: adapters see line texts, the agent sees prompts.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Literal

from goldevidence.grammar import UID_RE, line_step, log_lines
from goldevidence.predictions import extract_json_object
from goldevidence.rows import CellLabels, PredictionLine, Row, RowMeta
from lens import Dataset, Episode, GroundTruth, Question, QuestionType, Scope
from lens.plugin_api import QuestionRecord, is_scored

_CITE = re.compile(r"\[[^\[\]\n]{1,200}\]")
BASE_TIME = datetime(2024, 1, 1, tzinfo=UTC)
Granularity = Literal["line", "step"]

ANSWER_INSTRUCTIONS = (
    "The memory holds the lines of an episode log. Search it (e.g. for the tag name) and read "
    "the UPDATE lines: only SET and CLEAR lines are authoritative, NOTE/DISTRACTOR/SUMMARY/"
    "INSTRUCTION/QUOTE lines are not, and the line with the highest step wins.\n"
    'Final answer: one JSON object {"value": <string or null>, "support_ids": [<U-ids of the '
    'UPDATE lines that establish it>]}, then cite those records as [ref_id].'
)
# Declared in the lens.prompt_templates entry-point group, so lens's prompts hash covers it.
PROMPT_TEMPLATES = {"goldevidence.answer_instructions": ANSWER_INSTRUCTIONS}


def _ts(step: int, j: int) -> datetime:
    return BASE_TIME + timedelta(minutes=step, seconds=j)


def _qtype(meta: RowMeta) -> QuestionType:
    if meta.get("query_position") == "mid":
        return QuestionType.TEMPORAL
    if meta.get("has_instruction"):
        return QuestionType.DISTRACTOR_RESISTANCE
    return QuestionType.LONGITUDINAL


def scope_episodes(scope_id: str, document: str, granularity: Granularity
                   ) -> tuple[list[Episode], dict[str, str]]:
    """Episodes of one log and the map uid -> episode id."""
    lines = log_lines(document)
    episodes: list[Episode] = []
    uid_to_ep: dict[str, str] = {}
    if granularity == "line":
        per_step: dict[int, int] = {}
        for i, line in enumerate(lines):
            step = line_step(line) or 0
            j = per_step.get(step, 0)
            per_step[step] = j + 1
            uids = UID_RE.findall(line.split(" UPDATE ", 1)[0]) if " UPDATE " in line else []
            eid = f"{scope_id}.{uids[0]}" if uids else f"{scope_id}.L{i:05d}"
            episodes.append(Episode(episode_id=eid, scope_id=scope_id, timestamp=_ts(step, j),
                                    text=line, meta={"step": step, "uid": uids[0] if uids
                                                     else None}))
            if uids:
                uid_to_ep[uids[0]] = eid
    else:
        groups: dict[int, list[str]] = {}
        for line in lines:
            groups.setdefault(line_step(line) or 0, []).append(line)
        for step in sorted(groups):
            eid = f"{scope_id}.s{step:05d}"
            text = "\n".join(groups[step])
            episodes.append(Episode(episode_id=eid, scope_id=scope_id, timestamp=_ts(step, 0),
                                    text=text, meta={"step": step}))
            for ln in groups[step]:
                if " UPDATE " in ln:
                    for uid in UID_RE.findall(ln.split(" UPDATE ", 1)[0]):
                        uid_to_ep[uid] = eid
    return episodes, uid_to_ep


def rows_to_dataset(rows: list[Row], *, prefix: str = "",
                    granularity: Granularity = "line", dataset_id: str = "goldevidence",
                    cells: dict[str, CellLabels] | None = None) -> Dataset:
    """A lens Dataset from rows. ``prefix`` keeps scopes of several grids cells apart; ``cells``
    maps a prefix to the grid values it stands for (kept in scope meta for reports)."""
    by_episode: dict[str, list[Row]] = {}
    for r in rows:
        by_episode.setdefault(str(r.get("episode_id") or r["id"].rsplit("-Q", 1)[0]), []
                              ).append(r)
    scopes: list[Scope] = []
    questions: list[Question] = []
    for episode_id, ep_rows in by_episode.items():
        scope_id = f"{prefix}{episode_id}"
        document = ep_rows[0].get("document") or ""
        episodes, uid_to_ep = scope_episodes(scope_id, document, granularity)
        steps = [int(e.meta["step"]) for e in episodes]
        scopes.append(Scope(scope_id=scope_id, episodes=episodes,
                            meta={"goldevidence": {"episode_id": episode_id, "prefix": prefix,
                                                   **((cells or {}).get(prefix, {}))}}))
        for r in ep_rows:
            meta = r["meta"].copy()
            as_of = meta.get("as_of_step")
            checkpoint = (sum(1 for s in steps if s <= int(as_of)) if as_of is not None
                          else len(episodes))
            gold = r["gold"]
            support = [str(x) for x in gold.get("support_ids") or []]
            refs = list(dict.fromkeys(uid_to_ep[u] for u in support if u in uid_to_ep))
            value = gold.get("value")
            questions.append(Question(
                question_id=f"{prefix}{r['id']}", scope_id=scope_id,
                checkpoint_after=max(1, checkpoint), question_type=_qtype(meta),
                prompt=f"{r['question']}\n\n{ANSWER_INSTRUCTIONS}",
                ground_truth=GroundTruth(canonical_answer="null" if value is None else
                                         str(value), required_evidence_refs=refs,
                                         key_facts=[str(value)] if value is not None else []),
                meta={"goldevidence": {"row_id": r["id"], "gold": gold, "meta": meta,
                                       "prefix": prefix}},
            ))
    return Dataset(dataset_id=dataset_id, scopes=scopes, questions=questions,
                   meta={"scenario": "goldevidence", "granularity": granularity})


def rows_from_dataset(ds: Dataset) -> dict[str, Row]:
    """Rows (keyed by lens question id) rebuilt from a scenario dataset, for grading."""
    docs: dict[str, str] = {}
    for s in ds.scopes:
        lines = [e.text for e in s.ordered_episodes()]
        docs[s.scope_id] = "## Episode Log\n" + "\n".join(lines) + "\n"
    out = {}
    for q in ds.questions:
        info = q.meta.get("goldevidence")
        if not info:
            continue
        out[q.question_id] = Row(id=q.question_id, episode_id=q.scope_id,
                                 document=docs[q.scope_id], book="", question=q.prompt,
                                 gold=info["gold"], meta=info["meta"])
    return out


def uid_index(ds: Dataset) -> dict[str, dict[str, list[str]]]:
    """Per scope: episode id -> the UPDATE uids its text holds."""
    out: dict[str, dict[str, list[str]]] = {}
    for s in ds.scopes:
        out[s.scope_id] = {e.episode_id: [u for ln in e.text.splitlines() if " UPDATE " in ln
                                          for u in UID_RE.findall(ln.split(" UPDATE ", 1)[0])]
                           for e in s.episodes}
    return out


def _to_uids(refs: list[str], eps: dict[str, list[str]]) -> list[str]:
    out: dict[str, None] = {}
    for ref in refs:
        ref = str(ref).strip().strip("[]")
        if ref in eps:
            out.update(dict.fromkeys(eps[ref]))
        elif UID_RE.fullmatch(ref):
            out[ref] = None
        else:
            tail = ref.rsplit(".", 1)[-1]
            if UID_RE.fullmatch(tail):
                out[tail] = None
            elif ref:
                out[ref] = None  # unknown: kept so the grader counts it
    return list(out)


def record_to_prediction(rec: QuestionRecord, eps: dict[str, list[str]]) -> PredictionLine:
    """The prediction a lens answer makes: JSON {value, support_ids} in the text; cited
    ``[ref]`` ids stand in for support ids when the JSON has none."""
    pred = PredictionLine(id=rec.question_id)
    body = None
    if rec.status == "answered":
        body = extract_json_object(rec.answer) or extract_json_object(
            rec.answer.replace('\\"', '"'))
    if body is not None and "value" in body:
        pred["value"] = body.get("value")
    elif rec.status == "answered" and rec.answer.strip():
        # Not JSON (small models often answer "value [ref]"): the text without its
        # citations is the value, when it is one token; anything longer stays unparsed.
        bare = _CITE.sub(" ", rec.answer).strip().strip(".,;:'\"` ")
        if bare and " " not in bare:
            pred["value"] = bare
            pred["answer_format"] = "text"
    ids = body.get("support_ids") if body else None
    if not isinstance(ids, list) or not ids:
        ids = rec.cited_refs
    pred["support_ids"] = _to_uids([str(x) for x in ids], eps)
    presented = _to_uids(rec.retrieved_refs, eps)
    # Texts the agent received may also name ids directly (a step-granular episode).
    pred["presented_ids"] = presented
    agent_calls = [c for c in rec.model_calls if c.role == "agent"]
    pred["usage"] = {"prompt_tokens": sum(c.prompt_tokens for c in agent_calls),
                     "completion_tokens": sum(c.completion_tokens for c in agent_calls)}
    pred["passes"] = len(agent_calls)
    pred["wall_s"] = rec.wall_s
    if not is_scored(rec.status):
        pred["error"] = rec.error
    return pred
