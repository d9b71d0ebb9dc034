"""Import LongMemEval-V2 (Wu et al., 2026, "Evaluating Long-Term Agent Memory Toward Experienced
Colleagues") into the LENS format, as text.

The benchmark is released (Hugging Face ``xiaowu0162/longmemeval-v2``) as a data root holding
``questions.jsonl`` (one question a line: ``id``, ``domain``, ``environment``, ``question_type``,
``question``, ``image``, ``answer``, ``eval_function``), ``trajectories.jsonl`` (the shared pool of
web-agent trajectories: ``id``, ``domain``, ``goal``, ``start_url``, ``outcome`` and ``states``,
each state a page with ``url``, ``thought``, ``action``, ``accessibility_tree`` and
``screenshot``) and ``haystacks/lme_v2_<tier>.json`` (question id -> the ids of the trajectories
its memory is built from, in insertion order). Trajectories written by the collection tools keep
each state's page under ``observation`` (``content: [{url, thoughts, action, observation: {text,
screenshot}}]``, the goal in ``metadata.original_goal``); both shapes are read.

A haystack becomes a scope (questions whose haystacks are the same list share it), each of its
trajectories one episode in haystack order (parts of one, cut at state boundaries, when its text
passes the episode limit), a minute apart from an invented start: the data has no times. Every
question is asked after the last episode. Screenshots and question images are not passed (LENS
episodes and prompts are text); the import counts them and says so. The pool is indexed by byte
offset in one pass that also checks every record; a trajectory is then read back for each scope
that holds it, so memory holds one trajectory, never the pool. Every malformed record is listed
(file, line, field) before anything is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Required, TypedDict

from lens.core.errors import DatasetError
from lens.data.dataset import MAX_EPISODE_CHARS, MAX_ID_CHARS, QuestionType
from lens.data.importers.common import answer_truth, short_facts
from lens.data.importers.longmemeval_v2_source import (
    CATEGORIES,
    Problems,
    QuestionRow,
    State,
    Trajectory,
    V2Question,
    cross_check,
    find_source,
    index_trajectories,
    parse_eval_spec,
    read_haystack,
    read_questions,
    read_trajectory,
)
from lens.data.importers.records import GroundTruthJson, QuestionJson
from lens.data.importers.writer import StreamingDatasetWriter

LENS_TYPES: dict[str, QuestionType] = {
    "static": QuestionType.NULL_HYPOTHESIS,
    "dynamic": QuestionType.LONGITUDINAL,
    "procedure": QuestionType.ACTION_RECOMMENDATION,
    "gotchas": QuestionType.ACTION_RECOMMENDATION,
}
# Flawed-premise questions: the right answer names what is wrong with the question.
PREMISE_TYPE = QuestionType.NEGATIVE
_EPOCH = datetime(2024, 1, 1)
# A goal or URL longer than this is cut in the episode header, which opens every part.
HEADER_FIELD_CHARS = 10_000
_CUT_NOTE = "\n[… page text cut by lens: the state alone passes the episode limit]"

# The reader's instructions of the benchmark (its per-domain system prompt), in lens's words;
# the answer format is what its grading reads.
DOMAIN_FRAMES = {
    "web": ("You are an experienced colleague who knows a customised web environment: a "
            "Magento shopping site, its Magento admin site and a Postmill (Reddit-like) forum."),
    "enterprise": "You are an experienced colleague who knows a customised ServiceNow instance.",
}
ANSWER_FORMAT = (
    "Answer from your memory of this environment. Put your final answer inside \\boxed{}. If "
    "you do not know, answer exactly \\boxed{UNKNOWN}; never guess. If the question rests on "
    "a premise that is wrong in this environment, explain inside \\boxed{} what is wrong.")
IMAGE_NOTE = ("(This question came with a screenshot, which is not available here: the "
              "benchmark is imported as text.)")

# -- writing --------------------------------------------------------------------------------------
def render_state(s: State, limit: int) -> tuple[str, bool]:
    """A state as text, and whether its page text was cut to fit ``limit`` characters."""
    head = [f"Step {s.step}: {s.url}"]
    if s.thought:
        head.append(f"Thought: {s.thought}")
    if s.action:
        head.append(f"Action: {s.action}")
    head.append("Page (accessibility tree):")
    top = "\n".join(head) + "\n"
    if len(top) + len(s.text) <= limit:
        return top + s.text, False
    keep = max(0, limit - len(top) - len(_CUT_NOTE))
    return top + s.text[:keep] + _CUT_NOTE, True


def trajectory_parts(t: Trajectory, limit: int = MAX_EPISODE_CHARS) -> tuple[list[str], int]:
    """The trajectory's text in as few parts as fit ``limit`` characters each, cut at state
    boundaries (each part opens with the trajectory's header); and how many states had to be
    cut to fit alone."""
    header = [f"Web-agent trajectory {t.tid}"
              + (f" ({', '.join(x for x in (t.domain, t.environment) if x)})"
                 if t.domain or t.environment else ""),
              f"Goal: {t.goal[:HEADER_FIELD_CHARS]}",
              f"Start URL: {t.start_url[:HEADER_FIELD_CHARS]}"]
    if t.outcome:
        header.append(f"Outcome: {t.outcome}")
    head = "\n".join(header)
    # Room for the part marker added below when the trajectory needs several parts.
    room = limit - len(head) - 40
    blocks, cut = [], 0
    for s in t.states:
        text, was_cut = render_state(s, room)
        blocks.append(text)
        cut += was_cut
    parts: list[list[str]] = [[]]
    size = 0
    for b in blocks:
        if parts[-1] and size + len(b) + 2 > room:
            parts.append([])
            size = 0
        parts[-1].append(b)
        size += len(b) + 2
    n = len(parts)
    out = [head + (f"\n(part {i + 1} of {n})" if n > 1 else "") + "\n\n" + "\n\n".join(p)
           for i, p in enumerate(parts)]
    return out, cut


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.:-]+", "-", text).strip("-")[:80] or "x"


def _good_id(text: str) -> bool:
    return (len(text) <= MAX_ID_CHARS and text == text.strip()
            and not any(c in "/\\" or ord(c) < 32 or c == "\x7f" for c in text))


def _unique(base: str, used: set[str]) -> str:
    """``base``, or ``base-2``, ``base-3`` … when an earlier id took it."""
    name, n = base, 1
    while name in used:
        n += 1
        name = f"{base}-{n}"
    used.add(name)
    return name


def _facts(q: QuestionRow) -> tuple[list[str], str | None]:
    """Key facts of a phrase-matched answer (each phrase, when short); a lone phrase that is a
    verdict ("No") is the conclusion. Letters of a multiple choice and judged answers have
    none."""
    answer = q.row["answer"]
    if q.eval_name not in ("norm_phrase_set_match", "norm_phrase_set_match_ordered"):
        return [], None
    given = q.eval_options.get("separators", [",", ";"])
    # parse_eval_spec reads separators as a list (or none, for null).
    seps = given if isinstance(given, list) else []
    pieces = re.split("|".join(re.escape(s) for s in seps), answer) if seps else [answer]
    pieces = [p.strip() for p in pieces if p.strip()]
    if len(pieces) == 1:
        return answer_truth(pieces[0])
    facts = [f for p in pieces for f in short_facts(p)]
    return (facts if len(facts) == len(pieces) else []), None


def _prompt(row: V2Question) -> str:
    parts = [DOMAIN_FRAMES[row["domain"]], ANSWER_FORMAT]
    if row.get("image"):
        parts.append(IMAGE_NOTE)
    parts.append(f"Question: {row['question']}")
    return "\n\n".join(parts)


_KNOWN_FIELDS = ("id", "domain", "environment", "question_type", "question", "image", "answer",
                 "eval_function")


class _QuestionMeta(TypedDict, total=False):
    source: Required[str]
    question_id: Required[str]
    question_type: Required[str]
    category: Required[str]
    domain: Required[str]
    environment: Required[str | None]
    eval_function: Required[str]
    image: Required[str | None]
    raw_question: Required[str]
    abstention: Required[bool]
    tier: Required[str | None]
    haystack_size: Required[int]
    lme_v2: dict[str, object]  # the line's fields the import does not know, as given


def _question(q: QuestionRow, qid: str, scope_id: str, checkpoint: int, tier: str | None,
              haystack_size: int) -> QuestionJson:
    row = q.row
    category = CATEGORIES[row["question_type"]]
    premise = category.endswith("-abs")
    facts, conclusion = ([], None) if premise else _facts(q)
    truth: GroundTruthJson = {"canonical_answer": row["answer"], "required_evidence_refs": [],
                              "key_facts": facts}
    if conclusion is not None:
        truth["conclusion"] = conclusion
    meta: _QuestionMeta = {
        "source": "longmemeval-v2", "question_id": row["id"],
        "question_type": row["question_type"], "category": category,
        "domain": row["domain"], "environment": row.get("environment"),
        "eval_function": row["eval_function"], "image": row.get("image"),
        "raw_question": row["question"], "abstention": premise, "tier": tier,
        "haystack_size": haystack_size,
    }
    extra = {k: v for k, v in row.items() if k not in _KNOWN_FIELDS}
    if extra:
        meta["lme_v2"] = extra
    return {"question_id": qid, "scope_id": scope_id, "checkpoint_after": checkpoint,
            "question_type": (PREMISE_TYPE if premise else LENS_TYPES[category]).value,
            "prompt": _prompt(row), "ground_truth": truth, "meta": meta}


@dataclass
class _Counts:
    episodes_split: int = 0
    states_cut: int = 0
    screenshots: int = 0
    images: int = 0
    left_out: list[str] = field(default_factory=list)


def write_longmemeval_v2(src: Path, out: Path) -> dict[str, Any]:
    """Import the haystack ``src`` names (a haystack file or a data root with one) straight into
    the LENS file ``out``. Returns the counts, and what the text-only import leaves out."""
    source = find_source(src)
    problems = Problems()
    haystack = read_haystack(source.haystack, problems)
    flawed: set[str] = set()
    questions = read_questions(source.questions, problems, flawed)
    pool, pool_shots = index_trajectories(source.trajectories, problems, flawed)
    cross_check(source, haystack, questions, pool, flawed, problems)
    if problems.items:
        raise DatasetError(f"{src}: {len(problems.items)} problem(s) in the LongMemEval-V2 data; "
                           "nothing was written", problems.items)
    counts = _Counts()
    # Questions with the same haystack (the same list, in the same order) share a scope.
    groups: dict[tuple[str, ...], list[QuestionRow]] = {}
    for qid, q in questions.items():
        if qid in haystack:
            groups.setdefault(tuple(haystack[qid]), []).append(q)
        else:
            counts.left_out.append(qid)
    tier = source.tier
    used: set[str] = set()
    with StreamingDatasetWriter(out, f"longmemeval-v2-{tier or source.haystack.stem}") as w:
        for ids, qs in groups.items():
            scope_id = _unique(f"lme2_{tier or 'custom'}_{_slug(qs[0].row['id'])}", used)
            w.begin_scope(scope_id)
            n = 0
            for k, tid in enumerate(ids):
                t = read_trajectory(source.trajectories, pool[tid])
                parts, cut = trajectory_parts(t)
                counts.states_cut += cut
                counts.episodes_split += len(parts) > 1
                counts.screenshots += t.screenshots
                for pi, text in enumerate(parts):
                    eid = f"{scope_id}_t{k + 1:03d}" + (f"p{pi + 1}" if len(parts) > 1 else "")
                    w.episode({"episode_id": eid, "scope_id": scope_id,
                               "timestamp": (_EPOCH + timedelta(minutes=n)).strftime(
                                   "%Y-%m-%dT%H:%M:%S"),
                               "text": text,
                               "meta": {"trajectory_id": tid, "part": pi + 1,
                                        "parts": len(parts), "states": len(t.states),
                                        "screenshots_not_passed": t.screenshots,
                                        "outcome": t.outcome}},
                              f"{source.trajectories}: line {pool[tid].line}")
                    n += 1
            w.end_scope({"source": "longmemeval-v2", "tier": tier,
                         "domain": qs[0].row["domain"], "haystack": list(ids),
                         "question_ids": [q.row["id"] for q in qs]})
            for q in qs:
                counts.images += bool(q.row.get("image"))
                qid = q.row["id"]
                qid = _unique(qid if _good_id(qid) else _slug(qid), used)
                w.question(_question(q, qid, scope_id, n, tier, len(ids)),
                           f"{source.questions}: line {q.line}")
        result: dict[str, Any] = w.finish({"source": {
            "format": "longmemeval-v2", "haystack": source.haystack.name, "tier": tier,
            "text_only": True, "pool_trajectories": len(pool),
            "pool_screenshots": pool_shots,
            "screenshots_not_passed": counts.screenshots,
            "question_images_not_passed": counts.images,
            "trajectories_split": counts.episodes_split, "states_cut": counts.states_cut,
            "questions_left_out": counts.left_out}})
    result.update({"screenshots_not_passed": counts.screenshots,
                   "question_images_not_passed": counts.images,
                   "trajectories_split": counts.episodes_split,
                   "states_cut": counts.states_cut,
                   "questions_left_out": len(counts.left_out)})
    return result


__all__ = ["CATEGORIES", "State", "Trajectory", "parse_eval_spec", "trajectory_parts",
           "write_longmemeval_v2"]
